// Bodies of the reductions. x is viewed as [outer, n, inner]. Over the last axis (inner 1) a
// sum is one warp's per output (SumRowBody); otherwise output element j (o = j / inner,
// c = j % inner) reduces x[o, 0..n, c] in order k = 0, 1, ..., one thread each.
#pragma once
#include <cstdint>

#include "engine/cuda/device_math.h"
#include "engine/cuda/host_device.h"
#include "engine/cuda/warp.h"

namespace nce::cuda {

template <typename T>
struct SumBody {
    const T* x;
    T* out;
    int64_t n, inner;
    NCE_HOST_DEVICE void operator()(int64_t j) const {
        const T* first = x + (j / inner) * n * inner + j % inner;
        T total = 0;
        for (int64_t k = 0; k < n; ++k) total += first[k * inner];
        out[j] = total;
    }
};

// The sum of row r of x [rows, n] (a reduction over the last axis), by one warp: lane l adds
// x[r, l], x[r, l + 32], ... and the butterfly adds the lanes (warp.h). x holds `count`
// elements; the last row may be shorter than n (a long sum cut into blocks of n).
template <typename T>
struct SumRowBody {
    const T* x;
    T* out;
    int64_t n, count;
    NCE_HOST_DEVICE void operator()(int64_t r, const Warp& warp) const {
        const T* row = x + r * n;
        const int64_t length = count - r * n < n ? count - r * n : n;
        const T total = warp.sum<T>([&](int lane) {
            T part = 0;
            for (int64_t k = lane; k < length; k += kWarpSize) part += row[k];
            return part;
        });
        warp.each([&](int lane) {
            if (lane == 0) out[r] = total;
        });
    }
};

// The max and, when indices is not null, its index: the first maximum wins ties, and a NaN
// wins over any number, so NaN propagates.
template <typename T>
struct MaxBody {
    const T* x;
    T* out;
    int64_t* indices;
    int64_t n, inner;
    NCE_HOST_DEVICE void operator()(int64_t j) const {
        const T* first = x + (j / inner) * n * inner + j % inner;
        T best = first[0];
        int64_t best_index = 0;
        for (int64_t k = 1; k < n; ++k) {
            const T v = first[k * inner];
            if (v > best || (math::is_nan(v) && !math::is_nan(best))) {
                best = v;
                best_index = k;
            }
        }
        out[j] = best;
        if (indices) indices[j] = best_index;
    }
};

}  // namespace nce::cuda
