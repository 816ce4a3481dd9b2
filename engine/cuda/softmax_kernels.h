// Per-row bodies of softmax and log-softmax over the last axis, and their backward. Row r
// of x [rows, columns] is one thread's: the CPU backend's formulas (engine/cpu/softmax.cpp),
// the sums taken left to right.
#pragma once
#include <cstdint>

#include "engine/cuda/device_math.h"
#include "engine/cuda/host_device.h"

namespace nce::cuda {

// exp(v), exactly 0 below log(smallest normal T), -inf included (engine/cpu/exact_exp.h).
template <typename T>
NCE_HOST_DEVICE inline T flushed_exp(T v, T lowest_normal_log) {
    return v < lowest_normal_log ? T(0) : math::exp(v);
}

// y_j = exp(x_j - m) / sum_k exp(x_k - m), m = max_k x_k;  log y_j = x_j - m - log sum_k exp(x_k - m).
template <typename T>
struct SoftmaxRowBody {
    const T* x;
    T* y;
    int64_t columns;
    bool log;
    T lowest_normal_log;
    NCE_HOST_DEVICE void operator()(int64_t r) const {
        const T* in = x + r * columns;
        T* out = y + r * columns;
        T shift = in[0];
        for (int64_t j = 1; j < columns; ++j) shift = in[j] > shift ? in[j] : shift;
        T total = 0;
        for (int64_t j = 0; j < columns; ++j) {
            out[j] = flushed_exp(in[j] - shift, lowest_normal_log);
            total += out[j];
        }
        if (log) {
            const T log_total = math::log(total);
            for (int64_t j = 0; j < columns; ++j) out[j] = in[j] - shift - log_total;
        } else {
            for (int64_t j = 0; j < columns; ++j) out[j] /= total;
        }
    }
};

// softmax:     dx_j = y_j (dy_j - sum_k dy_k y_k)
// log-softmax: dx_j = dy_j - exp(y_j) · sum_k dy_k
template <typename T>
struct SoftmaxBackwardRowBody {
    const T* y;
    const T* dy;
    T* dx;
    int64_t columns;
    bool log;
    T lowest_normal_log;
    NCE_HOST_DEVICE void operator()(int64_t r) const {
        const T* out = y + r * columns;
        const T* g = dy + r * columns;
        T* d = dx + r * columns;
        T total = 0;
        if (log) {
            for (int64_t j = 0; j < columns; ++j) total += g[j];
            for (int64_t j = 0; j < columns; ++j) d[j] = g[j] - flushed_exp(out[j], lowest_normal_log) * total;
        } else {
            for (int64_t j = 0; j < columns; ++j) total += g[j] * out[j];
            for (int64_t j = 0; j < columns; ++j) d[j] = out[j] * (g[j] - total);
        }
    }
};

}  // namespace nce::cuda
