#include "nn/adam_update.h"

#include <algorithm>
#include <cmath>

namespace nce::nn {

// The rule, one Tensor operation per line (see the derivation above Adam::update in
// nn/optimizer.cpp).
AdamTensors reference_adam_update(const AdamTensors& previous, const Tensor& grad, const AdamHyperparameters& h) {
    const double lr = h.learning_rate;
    Tensor p = previous.parameter, g = grad;
    if (h.weight_decay != 0 && !h.decoupled_weight_decay) g = g + p * h.weight_decay;
    if (h.weight_decay != 0 && h.decoupled_weight_decay) p = p * (1 - lr * h.weight_decay);

    AdamTensors next;
    next.exp_avg = previous.exp_avg * h.beta1 + g * (1 - h.beta1);
    next.exp_avg_sq = previous.exp_avg_sq * h.beta2 + g * g * (1 - h.beta2);

    const double step = static_cast<double>(h.step);
    const double bias_correction1 = 1 - std::pow(h.beta1, step);
    const double bias_correction2 = 1 - std::pow(h.beta2, step);
    const double step_size = lr / bias_correction1;

    Tensor second_moment = next.exp_avg_sq;
    if (h.amsgrad) {
        next.max_exp_avg_sq = maximum(previous.max_exp_avg_sq, next.exp_avg_sq);
        second_moment = next.max_exp_avg_sq;
    }
    Tensor denom = sqrt(second_moment) / std::sqrt(bias_correction2) + h.eps;
    next.parameter = p - next.exp_avg / denom * step_size;
    return next;
}

AdamTensors fused_adam_update(const AdamTensors& previous, const Tensor& grad, const AdamHyperparameters& h) {
    const Tensor& p = previous.parameter;
    NCE_CHECK(grad.shape() == p.shape() && grad.dtype() == p.dtype() && previous.exp_avg.shape() == p.shape() &&
                  previous.exp_avg_sq.shape() == p.shape(),
              "adam update: gradient {} and moments must have the parameter's shape {} and dtype",
              shape_string(grad.shape()), shape_string(p.shape()));
    const double lr = h.learning_rate, step = static_cast<double>(h.step);
    const double bias_correction1 = 1 - std::pow(h.beta1, step), bias_correction2 = 1 - std::pow(h.beta2, step);
    AdamStep constants;
    constants.l2_in_gradient = h.weight_decay != 0 && !h.decoupled_weight_decay;
    constants.decoupled = h.weight_decay != 0 && h.decoupled_weight_decay;
    constants.amsgrad = h.amsgrad;
    constants.weight_decay = h.weight_decay;
    constants.shrink = 1 - lr * h.weight_decay;
    constants.beta1 = h.beta1;
    constants.one_minus_beta1 = 1 - h.beta1;
    constants.beta2 = h.beta2;
    constants.one_minus_beta2 = 1 - h.beta2;
    constants.sqrt_bias_correction2 = std::sqrt(bias_correction2);
    constants.eps = h.eps;
    constants.step_size = lr / bias_correction1;
    AdamTensors next;
    next.parameter = Tensor::empty(p.shape(), p.dtype(), p.device());
    next.exp_avg = Tensor::empty(p.shape(), p.dtype(), p.device());
    next.exp_avg_sq = Tensor::empty(p.shape(), p.dtype(), p.device());
    if (h.amsgrad) next.max_exp_avg_sq = Tensor::empty(p.shape(), p.dtype(), p.device());
    backend_for(p.device())
        .adam_step(constants, p, grad, previous.exp_avg, previous.exp_avg_sq, previous.max_exp_avg_sq, next.parameter,
                   next.exp_avg, next.exp_avg_sq, next.max_exp_avg_sq);
    return next;
}

}  // namespace nce::nn
