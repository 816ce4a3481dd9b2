// Bodies of the row gathers and scatters (embedding lookup and its backward) and the
// per-row picks of a class column (cross-entropy's target logit and its backward). Every
// index is checked where it is read: one out of range is recorded (device_errors.h) and
// its element skipped (0 for a gather), never read or written out of bounds.
#pragma once
#include <cstdint>

#include "engine/cuda/device_errors.h"
#include "engine/cuda/host_device.h"
#include "engine/cuda/warp.h"

namespace nce::cuda {

// table [V, width], indices [n] -> out [n, width]: element i is (row i / width, column
// i % width) of out, read from row indices[i / width] of the table.
template <typename T>
struct IndexSelectBody {
    const T* table;
    const int64_t* indices;
    T* out;
    int64_t width, rows;
    DeviceErrorRecord* errors;
    NCE_HOST_DEVICE void operator()(int64_t i) const {
        const int64_t row = indices[i / width];
        if (!index_in_range(row, rows)) {
            record_bad_index(errors, DeviceErrorOp::IndexSelect, row, rows);
            out[i] = T(0);
            return;
        }
        out[i] = table[row * width + i % width];
    }
};

// table [V, width] += src [n, width] by rows, without atomics and without sorting: one warp
// per destination row v walks the n indices in order and adds each source row that names v,
// lane l taking columns l, l + 32, ... So every element adds its sources in the order the
// CPU backend adds them: the same bits on every launch. (Work V · n index reads; the warp
// of row 0 also records an index out of range, which no row matches.)
template <typename T>
struct IndexAddRowBody {
    const T* src;
    const int64_t* indices;
    T* table;
    int64_t n, width, rows;
    DeviceErrorRecord* errors;
    NCE_HOST_DEVICE void operator()(int64_t v, const Warp& warp) const {
        T* target = table + v * width;
        warp.each([&](int lane) {
            for (int64_t k = 0; k < n; ++k) {
                const int64_t row = indices[k];
                if (row == v) {
                    const T* source = src + k * width;
                    for (int64_t c = lane; c < width; c += kWarpSize) target[c] += source[c];
                } else if (v == 0 && lane == 0 && !index_in_range(row, rows)) {
                    record_bad_index(errors, DeviceErrorOp::IndexAdd, row, rows);
                }
            }
        });
    }
};

// x [N, C], targets [N] -> out [N]: out[i] = x[i, targets[i]].
template <typename T>
struct GatherLastAxisBody {
    const T* x;
    const int64_t* targets;
    T* out;
    int64_t columns;
    DeviceErrorRecord* errors;
    NCE_HOST_DEVICE void operator()(int64_t i) const {
        const int64_t column = targets[i];
        if (!index_in_range(column, columns)) {
            record_bad_index(errors, DeviceErrorOp::Gather, column, columns);
            out[i] = T(0);
            return;
        }
        out[i] = x[i * columns + column];
    }
};

// dx [N, C] += values [N] at (i, targets[i]): row i touches only its own row of dx.
template <typename T>
struct ScatterAddLastAxisBody {
    const T* values;
    const int64_t* targets;
    T* dx;
    int64_t columns;
    DeviceErrorRecord* errors;
    NCE_HOST_DEVICE void operator()(int64_t i) const {
        const int64_t column = targets[i];
        if (!index_in_range(column, columns)) {
            record_bad_index(errors, DeviceErrorOp::ScatterAdd, column, columns);
            return;
        }
        dx[i * columns + column] += values[i];
    }
};

}  // namespace nce::cuda
