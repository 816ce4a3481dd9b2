// Per-element bodies of the kernels that move values: permute, copies along an axis.
// Values move as words of their size (4 or 8 bytes), so every dtype goes through one body.
#pragma once
#include <cstdint>

#include "engine/cuda/host_device.h"

namespace nce::cuda {

// out = x with axes reordered: out element i, split into out's coordinates, reads x at
// sum_axis coordinate · source_strides[axis] (x's stride of the axis out's axis came from).
template <typename Word>
struct PermuteBody {
    const Word* x;
    Word* out;
    int rank;
    int64_t out_sizes[kMaxRank];
    int64_t source_strides[kMaxRank];
    NCE_HOST_DEVICE void operator()(int64_t i) const {
        int64_t offset = 0, rest = i;
        for (int axis = rank - 1; axis >= 0; --axis) {
            offset += (rest % out_sizes[axis]) * source_strides[axis];
            rest /= out_sizes[axis];
        }
        out[i] = x[offset];
    }
};

// src [outer, src_axis, inner] and dst [outer, dst_axis, inner]: element i of the
// outer · length · inner moved is (o, k) with o = i / block, k = i % block (block =
// length · inner), from src[o, src_start.., ..] to dst[o, dst_start.., ..].
template <typename T, bool accumulate>
struct CopyAlongAxisBody {
    const T* src;
    T* dst;
    int64_t block, inner, src_axis, src_start, dst_axis, dst_start;
    NCE_HOST_DEVICE void operator()(int64_t i) const {
        const int64_t o = i / block, k = i % block;
        const T value = src[(o * src_axis + src_start) * inner + k];
        T& target = dst[(o * dst_axis + dst_start) * inner + k];
        if constexpr (accumulate)
            target += value;
        else
            target = value;
    }
};

}  // namespace nce::cuda
