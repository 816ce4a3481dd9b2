// Softmax and log-softmax over the last axis, their backward, and the cross-entropy rows of
// the InfoNCE sweep: one warp per row (warp.h).
#include <cmath>
#include <limits>

#include "engine/cuda/cuda_backend.h"
#include "engine/cuda/device_tensor.h"
#include "engine/cuda/launch.h"
#include "engine/cuda/softmax_kernels.h"

namespace nce::cuda {
namespace {

// x viewed as [rows, columns] around its last axis (a scalar is one row of one).
struct Rows {
    int64_t rows, columns;
};

Rows rows_of(const Tensor& x) {
    const int64_t columns = x.rank() == 0 ? 1 : x.size(-1);
    return {columns == 0 ? 0 : x.numel() / columns, columns};
}

}  // namespace

void CudaBackend::softmax_last_axis(const Tensor& x, Tensor& out, bool log) {
    dispatch_floating(x.dtype(), "softmax", [&](auto zero) {
        using T = decltype(zero);
        const Rows shape = rows_of(x);
        launch_rows(shape.rows, SoftmaxRowBody<T>{device_data<T>(x, "softmax"), device_data<T>(out, "softmax"),
                                             shape.columns, log, std::log(std::numeric_limits<T>::min())});
    });
}

void CudaBackend::softmax_last_axis_backward(const Tensor& y, const Tensor& dy, Tensor& dx, bool log) {
    dispatch_floating(y.dtype(), "softmax backward", [&](auto zero) {
        using T = decltype(zero);
        const Rows shape = rows_of(y);
        launch_rows(shape.rows, SoftmaxBackwardRowBody<T>{device_data<T>(y, "softmax backward"),
                                                     device_data<T>(dy, "softmax backward"),
                                                     device_data<T>(dx, "softmax backward"), shape.columns, log,
                                                     std::log(std::numeric_limits<T>::min())});
    });
}

void CudaBackend::cross_entropy_rows(Tensor& logits, int64_t target_start, double scale, Tensor& row_loss) {
    dispatch_floating(logits.dtype(), "cross_entropy_rows", [&](auto zero) {
        using T = decltype(zero);
        const char* op = "cross_entropy_rows";
        launch_rows(logits.size(0), CrossEntropyRowBody<T>{device_data<T>(logits, op), device_data<T>(row_loss, op),
                                                           logits.size(1), target_start, scale,
                                                           std::log(std::numeric_limits<T>::min())});
    });
}

}  // namespace nce::cuda
