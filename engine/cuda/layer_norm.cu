// Layer normalisation over the last axis, forward and backward.
#include "engine/cuda/cuda_backend.h"
#include "engine/cuda/device_tensor.h"
#include "engine/cuda/launch.h"
#include "engine/cuda/layer_norm_kernels.h"

namespace nce::cuda {

// x [rows, width] (any leading shape); weight, bias [width]; y like x; mean, rstd [rows].
void CudaBackend::layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps, Tensor& y,
                             Tensor& mean, Tensor& rstd) {
    dispatch_floating(x.dtype(), "layer_norm", [&](auto zero) {
        using T = decltype(zero);
        const int64_t width = x.size(-1), rows = width == 0 ? 0 : x.numel() / width;
        launch_rows(rows, LayerNormRowBody<T>{device_data<T>(x, "layer_norm"), device_data<T>(weight, "layer_norm"),
                                         device_data<T>(bias, "layer_norm"), static_cast<T>(eps),
                                         device_data<T>(y, "layer_norm"), device_data<T>(mean, "layer_norm"),
                                         device_data<T>(rstd, "layer_norm"), width});
    });
}

// dx [rows, width] one warp per row; dweight, dbias [width] one column per thread.
void CudaBackend::layer_norm_backward(const Tensor& x, const Tensor& weight, const Tensor& mean, const Tensor& rstd,
                                      const Tensor& dy, Tensor& dx, Tensor& dweight, Tensor& dbias) {
    dispatch_floating(x.dtype(), "layer_norm backward", [&](auto zero) {
        using T = decltype(zero);
        const char* op = "layer_norm backward";
        const int64_t width = x.size(-1), rows = width == 0 ? 0 : x.numel() / width;
        const T* x_data = device_data<T>(x, op);
        const T* mean_data = device_data<T>(mean, op);
        const T* rstd_data = device_data<T>(rstd, op);
        const T* dy_data = device_data<T>(dy, op);
        launch_rows(rows, LayerNormInputGradientBody<T>{x_data, device_data<T>(weight, op), mean_data, rstd_data, dy_data,
                                                   device_data<T>(dx, op), width});
        launch(width, LayerNormParameterGradientBody<T>{x_data, mean_data, rstd_data, dy_data,
                                                        device_data<T>(dweight, op), device_data<T>(dbias, op), rows,
                                                        width});
    });
}

}  // namespace nce::cuda
