// The body of one Adam / AdamW step, element i of a parameter: the CPU backend's lines
// (engine/cpu/adam_step.cpp), each constant already cast to T.
#pragma once
#include <cstdint>

#include "engine/cuda/device_math.h"
#include "engine/cuda/host_device.h"

namespace nce::cuda {

template <typename T>
struct AdamBody {
    const T* p_in;
    const T* g_in;
    const T* m_in;
    const T* v_in;
    const T* max_in;  // null without amsgrad
    T* p_out;
    T* m_out;
    T* v_out;
    T* max_out;       // null without amsgrad
    bool l2_in_gradient, decoupled;
    T weight_decay, shrink, beta1, one_minus_beta1, beta2, one_minus_beta2, sqrt_bias_correction2, eps, step_size;
    NCE_HOST_DEVICE void operator()(int64_t i) const {
        T p = p_in[i], g = g_in[i];
        if (l2_in_gradient) g = g + p * weight_decay;
        if (decoupled) p = p * shrink;
        const T m = m_in[i] * beta1 + g * one_minus_beta1;
        const T v = v_in[i] * beta2 + g * g * one_minus_beta2;
        T second_moment = v;
        if (max_out) {
            second_moment = max_in[i] > v ? max_in[i] : v;
            max_out[i] = second_moment;
        }
        const T denom = math::sqrt(second_moment) / sqrt_bias_correction2 + eps;
        p_out[i] = p - m / denom * step_size;
        m_out[i] = m;
        v_out[i] = v;
    }
};

}  // namespace nce::cuda
