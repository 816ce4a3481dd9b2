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

namespace {

// The rule's constants, each cast to T first as the tensor math does (x * s computes x * T(s)).
template <typename T>
struct AdamConstants {
    bool l2_in_gradient, decoupled;
    T weight_decay, shrink, beta1, one_minus_beta1, beta2, one_minus_beta2, sqrt_bias_correction2, eps, step_size;
};

template <typename T>
AdamConstants<T> adam_constants(const AdamHyperparameters& h) {
    const double lr = h.learning_rate;
    const double step = static_cast<double>(h.step);
    const double bias_correction1 = 1 - std::pow(h.beta1, step);
    const double bias_correction2 = 1 - std::pow(h.beta2, step);
    AdamConstants<T> c;
    c.l2_in_gradient = h.weight_decay != 0 && !h.decoupled_weight_decay;
    c.decoupled = h.weight_decay != 0 && h.decoupled_weight_decay;
    c.weight_decay = static_cast<T>(h.weight_decay);
    c.shrink = static_cast<T>(1 - lr * h.weight_decay);
    c.beta1 = static_cast<T>(h.beta1);
    c.one_minus_beta1 = static_cast<T>(1 - h.beta1);
    c.beta2 = static_cast<T>(h.beta2);
    c.one_minus_beta2 = static_cast<T>(1 - h.beta2);
    c.sqrt_bias_correction2 = static_cast<T>(std::sqrt(bias_correction2));
    c.eps = static_cast<T>(h.eps);
    c.step_size = static_cast<T>(lr / bias_correction1);
    return c;
}

// The reference's lines for elements [begin, end). std::sqrt and '/' round correctly; the
// reference's vectorised sqrt and division may differ from them in the last bit. Pointers
// are __restrict and the constants a value, so the compiler vectorises the loop.
template <typename T>
void adam_elements(const T* __restrict p_in, const T* __restrict g_in, const T* __restrict m_in,
                   const T* __restrict v_in, const T* __restrict max_in, T* __restrict p_out, T* __restrict m_out,
                   T* __restrict v_out, T* __restrict max_out, int64_t begin, int64_t end, const AdamConstants<T> c) {
    for (int64_t i = begin; i < end; ++i) {
        T p = p_in[i], g = g_in[i];
        if (c.l2_in_gradient) g = g + p * c.weight_decay;
        if (c.decoupled) p = p * c.shrink;
        T m = m_in[i] * c.beta1 + g * c.one_minus_beta1;
        T v = v_in[i] * c.beta2 + g * g * c.one_minus_beta2;
        T second_moment = v;
        if (max_out) {
            second_moment = max_in[i] > v ? max_in[i] : v;  // maximum(a, b) = a > b ? a : b
            max_out[i] = second_moment;
        }
        T denom = std::sqrt(second_moment) / c.sqrt_bias_correction2 + c.eps;
        p_out[i] = p - m / denom * c.step_size;
        m_out[i] = m;
        v_out[i] = v;
    }
}

template <typename T>
void fused_adam_elements(const AdamTensors& previous, const Tensor& grad, AdamTensors& next,
                         const AdamHyperparameters& h) {
    const AdamConstants<T> constants = adam_constants<T>(h);
    const T* p_in = previous.parameter.data<T>();
    const T* g_in = grad.data<T>();
    const T* m_in = previous.exp_avg.data<T>();
    const T* v_in = previous.exp_avg_sq.data<T>();
    const T* max_in = h.amsgrad ? previous.max_exp_avg_sq.data<T>() : nullptr;
    T* p_out = next.parameter.data<T>();
    T* m_out = next.exp_avg.data<T>();
    T* v_out = next.exp_avg_sq.data<T>();
    T* max_out = h.amsgrad ? next.max_exp_avg_sq.data<T>() : nullptr;
    parallel_for(grad.numel(), 16384, [&](int64_t begin, int64_t end) {
        adam_elements<T>(p_in, g_in, m_in, v_in, max_in, p_out, m_out, v_out, max_out, begin, end, constants);
    });
}

}  // namespace

AdamTensors fused_adam_update(const AdamTensors& previous, const Tensor& grad, const AdamHyperparameters& h) {
    const Tensor& p = previous.parameter;
    NCE_CHECK(grad.shape() == p.shape() && grad.dtype() == p.dtype() && previous.exp_avg.shape() == p.shape() &&
                  previous.exp_avg_sq.shape() == p.shape(),
              "adam update: gradient {} and moments must have the parameter's shape {} and dtype",
              shape_string(grad.shape()), shape_string(p.shape()));
    if (p.device() != Device::CPU) return reference_adam_update(previous, grad, h);
    AdamTensors next;
    next.parameter = Tensor::empty(p.shape(), p.dtype());
    next.exp_avg = Tensor::empty(p.shape(), p.dtype());
    next.exp_avg_sq = Tensor::empty(p.shape(), p.dtype());
    if (h.amsgrad) next.max_exp_avg_sq = Tensor::empty(p.shape(), p.dtype());
    if (p.dtype() == Dtype::Float32)
        fused_adam_elements<float>(previous, grad, next, h);
    else
        fused_adam_elements<double>(previous, grad, next, h);
    return next;
}

}  // namespace nce::nn
