// Bodies of layer normalisation over the last axis of x [rows, width]: the forward and the
// input gradient one warp per row (warp.h), the parameter gradients one column per thread
// summing the rows in order. The CPU backend's formulas (engine/cpu/layer_norm.cpp), term for term.
#pragma once
#include <cstdint>

#include "engine/cuda/device_math.h"
#include "engine/cuda/host_device.h"
#include "engine/cuda/warp.h"

namespace nce::cuda {

// mean = (1/D) sum x, var = (1/D) sum (x - mean)^2, rstd = 1 / sqrt(var + eps),
// y = (x - mean) · rstd · weight + bias. One warp per row (warp.h).
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
    NCE_HOST_DEVICE void operator()(int64_t r, const Warp& warp) const {
        const T* in = x + r * width;
        T* out = y + r * width;
        const T total = warp.sum<T>([&](int lane) {
            T part = 0;
            for (int64_t c = lane; c < width; c += kWarpSize) part += in[c];
            return part;
        });
        const T mu = total / T(width);
        const T squares = warp.sum<T>([&](int lane) {
            T part = 0;
            for (int64_t c = lane; c < width; c += kWarpSize) part += (in[c] - mu) * (in[c] - mu);
            return part;
        });
        const T inv = T(1) / math::sqrt(squares / T(width) + eps);
        warp.each([&](int lane) {
            for (int64_t c = lane; c < width; c += kWarpSize) out[c] = (in[c] - mu) * inv * weight[c] + bias[c];
            if (lane == 0) {
                mean[r] = mu;
                rstd[r] = inv;
            }
        });
    }
};

// With g = dy · weight and xhat = (x - mean) · rstd, per row (one warp):
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
    NCE_HOST_DEVICE void operator()(int64_t r, const Warp& warp) const {
        const T* in = x + r * width;
        const T* g_out = dy + r * width;
        T* d = dx + r * width;
        const T mu = mean[r], inv = rstd[r];
        const T g_total = warp.sum<T>([&](int lane) {
            T part = 0;
            for (int64_t c = lane; c < width; c += kWarpSize) part += g_out[c] * weight[c];
            return part;
        });
        const T g_xhat_total = warp.sum<T>([&](int lane) {
            T part = 0;
            for (int64_t c = lane; c < width; c += kWarpSize) part += g_out[c] * weight[c] * ((in[c] - mu) * inv);
            return part;
        });
        const T g_mean = g_total / T(width), g_xhat_mean = g_xhat_total / T(width);
        warp.each([&](int lane) {
            for (int64_t c = lane; c < width; c += kWarpSize) {
                const T xhat = (in[c] - mu) * inv;
                d[c] = inv * (g_out[c] * weight[c] - g_mean - xhat * g_xhat_mean);
            }
        });
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
