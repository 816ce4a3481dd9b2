// Row bodies of softmax and log-softmax over the last axis, their backward, and the fused
// cross-entropy row of the InfoNCE sweep. Row r of x [rows, columns] is one warp's (warp.h):
// lane l takes columns l, l + 32, ...; the max and the sums are the warp's fixed butterfly,
// the same bits in the host-run build. The CPU backend's formulas (engine/cpu/softmax.cpp).
#pragma once
#include <cstdint>

#include "engine/cuda/device_math.h"
#include "engine/cuda/host_device.h"
#include "engine/cuda/warp.h"

namespace nce::cuda {

// exp(v), exactly 0 below log(smallest normal T), -inf included (engine/cpu/exact_exp.h).
template <typename T>
NCE_HOST_DEVICE inline T flushed_exp(T v, T lowest_normal_log) {
    return v < lowest_normal_log ? T(0) : math::exp(v);
}

// max_j row_j over the warp: each lane its columns, then the butterfly. -inf for no columns.
template <typename T>
NCE_HOST_DEVICE inline T row_max(const Warp& warp, const T* row, int64_t columns) {
    return warp.max<T>([&](int lane) {
        T best = -HUGE_VAL;
        for (int64_t j = lane; j < columns; j += kWarpSize) best = row[j] > best ? row[j] : best;
        return best;
    });
}

// out_j = exp(in_j - shift) (flushed) for this warp's row, and their sum; in and out may be
// the same row (each lane reads, then writes, only its own columns).
template <typename T>
NCE_HOST_DEVICE inline T row_exp_sum(const Warp& warp, const T* in, T* out, int64_t columns, T shift,
                                     T lowest_normal_log) {
    return warp.sum<T>([&](int lane) {
        T part = 0;
        for (int64_t j = lane; j < columns; j += kWarpSize) {
            out[j] = flushed_exp(in[j] - shift, lowest_normal_log);
            part += out[j];
        }
        return part;
    });
}

// y_j = exp(x_j - m) / sum_k exp(x_k - m), m = max_k x_k;  log y_j = x_j - m - log sum_k exp(x_k - m).
template <typename T>
struct SoftmaxRowBody {
    const T* x;
    T* y;
    int64_t columns;
    bool log;
    T lowest_normal_log;
    NCE_HOST_DEVICE void operator()(int64_t r, const Warp& warp) const {
        const T* in = x + r * columns;
        T* out = y + r * columns;
        const T shift = row_max(warp, in, columns);
        const T total = row_exp_sum(warp, in, out, columns, shift, lowest_normal_log);
        if (log) {
            const T log_total = math::log(total);
            warp.each([&](int lane) {
                for (int64_t j = lane; j < columns; j += kWarpSize) out[j] = in[j] - shift - log_total;
            });
        } else {
            warp.each([&](int lane) {
                for (int64_t j = lane; j < columns; j += kWarpSize) out[j] /= total;
            });
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
    NCE_HOST_DEVICE void operator()(int64_t r, const Warp& warp) const {
        const T* out = y + r * columns;
        const T* g = dy + r * columns;
        T* d = dx + r * columns;
        const T total = warp.sum<T>([&](int lane) {
            T part = 0;
            for (int64_t j = lane; j < columns; j += kWarpSize) part += log ? g[j] : g[j] * out[j];
            return part;
        });
        warp.each([&](int lane) {
            for (int64_t j = lane; j < columns; j += kWarpSize)
                d[j] = log ? g[j] - flushed_exp(out[j], lowest_normal_log) * total : out[j] * (g[j] - total);
        });
    }
};

// Row r of logits [rows, columns] against target t = target_start + r, in place:
//   loss_r = m + log s - l_rt,   m = max_j l_rj,  s = sum_j exp(l_rj - m)
//   l_rj <- scale · (exp(l_rj - m) / s - [j = t])
// Every lane reads l_rt before the first butterfly; the lane that owns column t writes it
// only after the second.
template <typename T>
struct CrossEntropyRowBody {
    T* logits;
    T* row_loss;
    int64_t columns, target_start;
    double scale;
    T lowest_normal_log;
    NCE_HOST_DEVICE void operator()(int64_t r, const Warp& warp) const {
        T* row = logits + r * columns;
        const int64_t target = target_start + r;
        const T positive = row[target];
        const T shift = row_max(warp, row, columns);
        const T total = row_exp_sum(warp, row, row, columns, shift, lowest_normal_log);
        const T inverse = T(scale / double(total)), target_scale = T(scale);
        warp.each([&](int lane) {
            for (int64_t j = lane; j < columns; j += kWarpSize) {
                row[j] *= inverse;
                if (j == target) row[j] -= target_scale;
            }
            if (lane == 0) row_loss[r] = T(double(shift) + math::log(double(total)) - double(positive));
        });
    }
};

}  // namespace nce::cuda
