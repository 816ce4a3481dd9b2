// One Adam / AdamW step over a parameter's elements in one sweep (Backend::adam_step; the
// rule is derived above Adam::update in nn/optimizer.cpp).
#include <cmath>

#include "engine/cpu/cpu_backend.h"

namespace nce::cpu {
namespace {

// The constants, each cast to T first, as the tensor-level rule computes x * s as x * T(s).
template <typename T>
struct Constants {
    bool l2_in_gradient, decoupled;
    T weight_decay, shrink, beta1, one_minus_beta1, beta2, one_minus_beta2, sqrt_bias_correction2, eps, step_size;
};

template <typename T>
Constants<T> constants_of(const AdamStep& s) {
    return {s.l2_in_gradient,
            s.decoupled,
            static_cast<T>(s.weight_decay),
            static_cast<T>(s.shrink),
            static_cast<T>(s.beta1),
            static_cast<T>(s.one_minus_beta1),
            static_cast<T>(s.beta2),
            static_cast<T>(s.one_minus_beta2),
            static_cast<T>(s.sqrt_bias_correction2),
            static_cast<T>(s.eps),
            static_cast<T>(s.step_size)};
}

// The rule's lines for elements [begin, end). std::sqrt and '/' round correctly. Pointers
// are __restrict and the constants a value, so the compiler vectorises the loop.
template <typename T>
void adam_elements(const T* __restrict p_in, const T* __restrict g_in, const T* __restrict m_in,
                   const T* __restrict v_in, const T* __restrict max_in, T* __restrict p_out, T* __restrict m_out,
                   T* __restrict v_out, T* __restrict max_out, int64_t begin, int64_t end, const Constants<T> c) {
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

}  // namespace

void CpuBackend::adam_step(const AdamStep& step, const Tensor& parameter, const Tensor& grad, const Tensor& exp_avg,
                           const Tensor& exp_avg_sq, const Tensor& max_exp_avg_sq, Tensor& parameter_out,
                           Tensor& exp_avg_out, Tensor& exp_avg_sq_out, Tensor& max_exp_avg_sq_out) {
    dispatch_floating(parameter.dtype(), "adam step", [&](auto zero) {
        using T = decltype(zero);
        const Constants<T> c = constants_of<T>(step);
        const T* p_in = parameter.data<T>();
        const T* g_in = grad.data<T>();
        const T* m_in = exp_avg.data<T>();
        const T* v_in = exp_avg_sq.data<T>();
        const T* max_in = step.amsgrad ? max_exp_avg_sq.data<T>() : nullptr;
        T* p_out = parameter_out.data<T>();
        T* m_out = exp_avg_out.data<T>();
        T* v_out = exp_avg_sq_out.data<T>();
        T* max_out = step.amsgrad ? max_exp_avg_sq_out.data<T>() : nullptr;
        parallel_for(grad.numel(), 16384, [&](int64_t begin, int64_t end) {
            adam_elements<T>(p_in, g_in, m_in, v_in, max_in, p_out, m_out, v_out, max_out, begin, end, c);
        });
    });
}

}  // namespace nce::cpu
