// Per-element bodies of the row gathers and scatters (embedding lookup and its backward)
// and the per-row picks of a class column (cross-entropy's target logit and its backward).
#pragma once
#include <cstdint>

#include "engine/cuda/host_device.h"

namespace nce::cuda {

// table [V, width], indices [n] -> out [n, width]: element i is (row i / width, column
// i % width) of out, read from row indices[i / width] of the table.
template <typename T>
struct IndexSelectBody {
    const T* table;
    const int64_t* indices;
    T* out;
    int64_t width;
    NCE_HOST_DEVICE void operator()(int64_t i) const { out[i] = table[indices[i / width] * width + i % width]; }
};

// table [V, width] += src [n, width] by rows, without atomics: the destination rows are
// grouped (rows[u] is the u-th distinct row named by the indices; its sources are
// sources[starts[u] .. starts[u+1]), in increasing order), and element i of the
// distinct rows · width owns table[rows[i / width], i % width], adding its sources in the
// order the CPU backend adds them, one after the other. The same bits on every launch.
template <typename T>
struct IndexAddBody {
    const T* src;
    const int64_t* rows;     // [distinct]
    const int64_t* starts;   // [distinct + 1]
    const int64_t* sources;  // [n]: rows of src, grouped by destination
    T* table;
    int64_t width;
    NCE_HOST_DEVICE void operator()(int64_t i) const {
        const int64_t u = i / width, column = i % width;
        T& target = table[rows[u] * width + column];
        T total = target;
        for (int64_t k = starts[u]; k < starts[u + 1]; ++k) total += src[sources[k] * width + column];
        target = total;
    }
};

// x [N, C], targets [N] -> out [N]: out[i] = x[i, targets[i]].
template <typename T>
struct GatherLastAxisBody {
    const T* x;
    const int64_t* targets;
    T* out;
    int64_t columns;
    NCE_HOST_DEVICE void operator()(int64_t i) const { out[i] = x[i * columns + targets[i]]; }
};

// dx [N, C] += values [N] at (i, targets[i]): row i touches only its own row of dx.
template <typename T>
struct ScatterAddLastAxisBody {
    const T* values;
    const int64_t* targets;
    T* dx;
    int64_t columns;
    NCE_HOST_DEVICE void operator()(int64_t i) const { dx[i * columns + targets[i]] += values[i]; }
};

}  // namespace nce::cuda
