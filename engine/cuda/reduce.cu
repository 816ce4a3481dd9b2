// Reductions along one axis, and sum-to-shape (the backward of broadcasting). Each output
// element is reduced by one thread in the CPU backend's order, so results match it exactly
// and never depend on the launch configuration.
#include "engine/cuda/cuda_backend.h"
#include "engine/cuda/device_tensor.h"
#include "engine/cuda/launch.h"
#include "engine/cuda/reduce_kernels.h"
#include "engine/sum_to_by_axes.h"

namespace nce::cuda {
namespace {

// The CPU backend's block for one long sum (engine/cpu/reduce.cpp).
constexpr int64_t kBlock = 8192;

}  // namespace

void CudaBackend::reduce(ReduceOp op, const Tensor& x, int64_t axis, Tensor& out, Tensor* indices) {
    dispatch_floating(x.dtype(), "reduce", [&](auto zero) {
        using T = decltype(zero);
        const Shape& shape = x.shape();
        int64_t outer = 1, inner = 1, n = shape.empty() ? 1 : shape[axis];
        for (int64_t i = 0; i < axis; ++i) outer *= shape[i];
        for (size_t i = axis + 1; i < shape.size(); ++i) inner *= shape[i];
        NCE_CHECK(n > 0 || op == ReduceOp::Sum, "max: cannot take the max over an empty axis");
        const T* x_data = device_data<T>(x, "reduce");
        T* out_data = device_data<T>(out, "reduce");
        if (op == ReduceOp::Max) {
            int64_t* index_data = indices ? device_data<int64_t>(*indices, "max") : nullptr;
            launch(outer * inner, MaxBody<T>{x_data, out_data, index_data, n, inner});
            return;
        }
        if (outer == 1 && inner == 1 && n > kBlock) {
            const int64_t blocks = (n + kBlock - 1) / kBlock;
            Tensor partial = Tensor::empty({blocks}, x.dtype(), Device::CUDA);
            T* partial_data = device_data<T>(partial, "reduce");
            launch(blocks, BlockSumBody<T>{x_data, partial_data, n, kBlock});
            launch(1, SumBody<T>{partial_data, out_data, blocks, 1});
            return;
        }
        launch(outer * inner, SumBody<T>{x_data, out_data, n, inner});
    });
}

void CudaBackend::sum_to(const Tensor& x, Tensor& out) { sum_to_by_axes(*this, x, out); }

}  // namespace nce::cuda
