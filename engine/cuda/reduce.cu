// Reductions along one axis, and sum-to-shape (the backward of broadcasting). A sum over the
// last axis is a warp's per output, in the warp's fixed order (warp.h); any other reduction
// one thread per output in the CPU backend's order. No result depends on the launch.
#include "engine/cuda/cuda_backend.h"
#include "engine/cuda/device_tensor.h"
#include "engine/cuda/launch.h"
#include "engine/cuda/reduce_kernels.h"
#include "engine/sum_to_by_axes.h"

namespace nce::cuda {
namespace {

// One long sum is cut into blocks of this many elements, a warp each, so it keeps more
// than one warp busy.
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
        if (inner == 1 && outer == 1 && n > kBlock) {  // one long sum: blocks of kBlock by warps, then their sums
            const int64_t blocks = (n + kBlock - 1) / kBlock;
            Tensor partial = Tensor::empty({blocks}, x.dtype(), Device::CUDA);
            T* partial_data = device_data<T>(partial, "reduce");
            launch_rows(blocks, SumRowBody<T>{x_data, partial_data, kBlock, n});
            launch_rows(1, SumRowBody<T>{partial_data, out_data, blocks, blocks});
            return;
        }
        if (inner == 1) {
            launch_rows(outer, SumRowBody<T>{x_data, out_data, n, outer * n});
            return;
        }
        launch(outer * inner, SumBody<T>{x_data, out_data, n, inner});
    });
}

void CudaBackend::sum_to(const Tensor& x, Tensor& out) { sum_to_by_axes(*this, x, out); }

}  // namespace nce::cuda
