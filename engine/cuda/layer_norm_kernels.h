// Bodies of layer normalisation over the last axis of x [rows, width]: the forward and the
// input gradient one row per thread, the parameter gradients one column per thread summing
// the rows in order. The CPU backend's formulas (engine/cpu/layer_norm.cpp), term for term.
#pragma once
#include <cstdint>

#include "engine/cuda/device_math.h"
#include "engine/cuda/host_device.h"

namespace nce::cuda {

// mean = (1/D) sum x, var = (1/D) sum (x - mean)^2, rstd = 1 / sqrt(var + eps),
// y = (x - mean) · rstd · weight + bias.
template <typename T>
struct LayerNormRowBody {
    const T* x;
    const T* weight;
    const T* bias;
    T eps;
    T* y;
    T* mean;
    T* rstd;
    int64_t width;
    NCE_HOST_DEVICE void operator()(int64_t r) const {
        const T* in = x + r * width;
        T* out = y + r * width;
        T total = 0;
        for (int64_t c = 0; c < width; ++c) total += in[c];
        const T mu = total / T(width);
        T squares = 0;
        for (int64_t c = 0; c < width; ++c) squares += (in[c] - mu) * (in[c] - mu);
        const T inv = T(1) / math::sqrt(squares / T(width) + eps);
        for (int64_t c = 0; c < width; ++c) out[c] = (in[c] - mu) * inv * weight[c] + bias[c];
        mean[r] = mu;
        rstd[r] = inv;
    }
};

// With g = dy · weight and xhat = (x - mean) · rstd, per row:
//   dx = rstd · (g - mean(g) - xhat · mean(g · xhat))
template <typename T>
struct LayerNormInputGradientBody {
    const T* x;
    const T* weight;
    const T* mean;
    const T* rstd;
    const T* dy;
    T* dx;
    int64_t width;
    NCE_HOST_DEVICE void operator()(int64_t r) const {
        const T* in = x + r * width;
        const T* g_out = dy + r * width;
        T* d = dx + r * width;
        T g_total = 0, g_xhat_total = 0;
        for (int64_t c = 0; c < width; ++c) {
            const T g = g_out[c] * weight[c];
            g_total += g;
            g_xhat_total += g * ((in[c] - mean[r]) * rstd[r]);
        }
        const T g_mean = g_total / T(width), g_xhat_mean = g_xhat_total / T(width);
        for (int64_t c = 0; c < width; ++c) {
            const T xhat = (in[c] - mean[r]) * rstd[r];
            d[c] = rstd[r] * (g_out[c] * weight[c] - g_mean - xhat * g_xhat_mean);
        }
    }
};

// dweight = sum over rows of dy · xhat, dbias = sum over rows of dy; column c per thread.
template <typename T>
struct LayerNormParameterGradientBody {
    const T* x;
    const T* mean;
    const T* rstd;
    const T* dy;
    T* dweight;
    T* dbias;
    int64_t rows, width;
    NCE_HOST_DEVICE void operator()(int64_t c) const {
        T weight_sum = 0, bias_sum = 0;
        for (int64_t r = 0; r < rows; ++r) {
            const T g = dy[r * width + c];
            weight_sum += g * (x[r * width + c] - mean[r]) * rstd[r];
            bias_sum += g;
        }
        dweight[c] = weight_sum;
        dbias[c] = bias_sum;
    }
};

}  // namespace nce::cuda
