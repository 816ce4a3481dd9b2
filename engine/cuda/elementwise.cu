// Elementwise kernels: unary maps, broadcasting binary ops, scalar ops, keep_where.
#include <cmath>
#include <limits>

#include "engine/cuda/cuda_backend.h"
#include "engine/cuda/device_runtime.h"
#include "engine/cuda/device_tensor.h"
#include "engine/cuda/elementwise_kernels.h"
#include "engine/cuda/launch.h"

namespace nce::cuda {
namespace {

// Strides of `shape` right-aligned into a rank-`rank` broadcast; 0 along broadcast axes.
void broadcast_strides(const Shape& shape, int rank, int64_t* strides) {
    const std::vector<int64_t> own = contiguous_strides(shape);
    const int lead = rank - static_cast<int>(shape.size());
    for (int axis = 0; axis < rank; ++axis) strides[axis] = 0;
    for (size_t i = 0; i < shape.size(); ++i) strides[lead + i] = shape[i] == 1 ? 0 : own[i];
}

}  // namespace

void CudaBackend::unary(UnaryOp op, const Tensor& x, Tensor& out) {
    dispatch_floating(x.dtype(), "unary op", [&](auto zero) {
        using T = decltype(zero);
        const T lowest_normal_log = std::log(std::numeric_limits<T>::min());
        launch(x.numel(), UnaryBody<T>{op, device_data<T>(x, "unary op"), device_data<T>(out, "unary op"),
                                       lowest_normal_log});
    });
}

void CudaBackend::binary_scalar(BinaryOp op, const Tensor& x, double s, Tensor& out) {
    dispatch_floating(x.dtype(), "scalar op", [&](auto zero) {
        using T = decltype(zero);
        launch(x.numel(), ScalarBody<T>{op, device_data<T>(x, "scalar op"), static_cast<T>(s),
                                        device_data<T>(out, "scalar op")});
    });
}

void CudaBackend::binary(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out) {
    const Shape& shape = out.shape();
    const int rank = static_cast<int>(shape.size());
    NCE_CHECK(rank <= kMaxRank, "binary op: rank {} is above the CUDA backend's {}", rank, kMaxRank);
    BroadcastLayout layout;
    layout.rank = rank;
    for (int axis = 0; axis < rank; ++axis) layout.sizes[axis] = shape[axis];
    broadcast_strides(a.shape(), rank, layout.a_strides);
    broadcast_strides(b.shape(), rank, layout.b_strides);
    dispatch_floating(a.dtype(), "binary op", [&](auto zero) {
        using T = decltype(zero);
        launch(out.numel(), BroadcastBinaryBody<T>{op, device_data<T>(a, "binary op"), device_data<T>(b, "binary op"),
                                                   device_data<T>(out, "binary op"), layout});
    });
}

void CudaBackend::keep_where(const Tensor& x, const Tensor& keep, double fill, Tensor& out) {
    const Shape& shape = out.shape();
    const int rank = static_cast<int>(shape.size());
    NCE_CHECK(rank <= kMaxRank, "keep_where: rank {} is above the CUDA backend's {}", rank, kMaxRank);
    BroadcastLayout layout;
    layout.rank = rank;
    for (int axis = 0; axis < rank; ++axis) layout.sizes[axis] = shape[axis];
    broadcast_strides(keep.shape(), rank, layout.a_strides);
    dispatch_floating(x.dtype(), "keep_where", [&](auto zero) {
        using T = decltype(zero);
        launch(out.numel(), KeepWhereBody<T>{device_data<T>(x, "keep_where"), device_data<T>(keep, "keep_where"),
                                             static_cast<T>(fill), device_data<T>(out, "keep_where"), layout});
    });
}

void CudaBackend::check_rows_nonzero(const Tensor& x, const std::string& message) {
    const int64_t columns = x.rank() == 0 ? 1 : x.size(-1), rows = columns == 0 ? 0 : x.numel() / columns;
    const int64_t check = remember_row_check(message);
    dispatch_any(x.dtype(), [&](auto zero) {
        using T = decltype(zero);
        launch_rows(rows, NonzeroRowBody<T>{device_data<T>(x, "check_rows_nonzero"), columns, check,
                                            runtime::error_record()});
    });
}

}  // namespace nce::cuda
