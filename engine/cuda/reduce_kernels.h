// Per-output bodies of the reductions. x is viewed as [outer, n, inner]; output element j
// (o = j / inner, c = j % inner) reduces x[o, 0..n, c] in order k = 0, 1, ..., as the CPU
// backend does, so each sum adds the same numbers in the same order.
#pragma once
#include <cstdint>

#include "engine/cuda/device_math.h"
#include "engine/cuda/host_device.h"

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

// One long sum in two passes: block b sums x[b·block .. (b+1)·block) into partial[b]; then
// one thread adds the partials in order (the CPU backend's blocks and order, so the same bits).
template <typename T>
struct BlockSumBody {
    const T* x;
    T* partial;
    int64_t n, block;
    NCE_HOST_DEVICE void operator()(int64_t b) const {
        const int64_t end = (b + 1) * block < n ? (b + 1) * block : n;
        T total = 0;
        for (int64_t k = b * block; k < end; ++k) total += x[k];
        partial[b] = total;
    }
};

}  // namespace nce::cuda
