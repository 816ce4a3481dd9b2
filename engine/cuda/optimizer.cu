// Optimizer updates: one Adam / AdamW step per parameter in one launch.
#include "engine/cuda/cuda_backend.h"
#include "engine/cuda/device_tensor.h"
#include "engine/cuda/launch.h"
#include "engine/cuda/optimizer_kernels.h"

namespace nce::cuda {

void CudaBackend::adam_step(const AdamStep& s, const Tensor& parameter, const Tensor& grad, const Tensor& exp_avg,
                            const Tensor& exp_avg_sq, const Tensor& max_exp_avg_sq, Tensor& parameter_out,
                            Tensor& exp_avg_out, Tensor& exp_avg_sq_out, Tensor& max_exp_avg_sq_out) {
    dispatch_floating(parameter.dtype(), "adam step", [&](auto zero) {
        using T = decltype(zero);
        const char* op = "adam step";
        launch(grad.numel(),
               AdamBody<T>{device_data<T>(parameter, op), device_data<T>(grad, op), device_data<T>(exp_avg, op),
                           device_data<T>(exp_avg_sq, op), s.amsgrad ? device_data<T>(max_exp_avg_sq, op) : nullptr,
                           device_data<T>(parameter_out, op), device_data<T>(exp_avg_out, op),
                           device_data<T>(exp_avg_sq_out, op),
                           s.amsgrad ? device_data<T>(max_exp_avg_sq_out, op) : nullptr, s.l2_in_gradient,
                           s.decoupled, static_cast<T>(s.weight_decay), static_cast<T>(s.shrink),
                           static_cast<T>(s.beta1), static_cast<T>(s.one_minus_beta1), static_cast<T>(s.beta2),
                           static_cast<T>(s.one_minus_beta2), static_cast<T>(s.sqrt_bias_correction2),
                           static_cast<T>(s.eps), static_cast<T>(s.step_size)});
    });
}

}  // namespace nce::cuda
