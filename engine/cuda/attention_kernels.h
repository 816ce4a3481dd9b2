// Bodies of multi-head attention over packed qkv [B, T, 3D] (head h: columns h·dh ..
// (h+1)·dh of each of q, k, v; dh = D / H). The products are strided-batched GEMMs over the
// B·H heads (packed_attention.cu); these bodies move heads in and out of the packed layout
// and do each row's softmax, one warp per row (warp.h). The math is
// engine/ops/packed_attention.cpp's and the CPU backend's (engine/cpu/packed_attention.cpp).
// Dropout on P: element e of P [B, H, T, T] is kept as random_bits::bernoulli_kept(seed,
// offset, e, threshold) says, the CPU's draw for the same element.
#pragma once
#include <cstdint>

#include "engine/cuda/device_math.h"
#include "engine/cuda/host_device.h"
#include "engine/cuda/softmax_kernels.h"
#include "engine/cuda/warp.h"
#include "engine/random.h"

namespace nce::cuda {

// The sizes of one packed attention, and the dropout on its probabilities.
template <typename T>
struct AttentionShape {
    int64_t batch, tokens, heads, head_dim, model_dim;  // B, T, H, dh, D = H · dh
    T scale;                                            // 1 / sqrt(dh)
    bool drop;                                          // keep < 1
    uint64_t seed, offset, threshold;
    T inverse_keep;

    // P element e after dropout: p · (kept ? 1 / keep : 0), or p without dropout.
    NCE_HOST_DEVICE T dropped(T p, int64_t e) const {
        if (!drop) return p;
        return p * (random_bits::bernoulli_kept(seed, offset, static_cast<uint64_t>(e), threshold) ? inverse_keep
                                                                                                   : T(0));
    }
};

// packed [B, T, parts · D] <-> heads [parts, B, H, T, dh]: element e of the heads tensor is
// (part, b, h, t, d), read from packed[(b·T + t), part·D + h·dh + d].
template <typename T>
struct ToHeadsBody {
    const T* packed;
    T* heads;
    int64_t parts;
    AttentionShape<T> shape;
    NCE_HOST_DEVICE void operator()(int64_t e) const {
        const int64_t dh = shape.head_dim, n = shape.tokens, H = shape.heads, B = shape.batch;
        const int64_t d = e % dh, t = e / dh % n, h = e / (dh * n) % H, b = e / (dh * n * H) % B,
                      part = e / (dh * n * H * B);
        heads[e] = packed[(b * n + t) * parts * shape.model_dim + part * shape.model_dim + h * dh + d];
    }
};

// The reverse: element e of packed [B, T, parts · D] from the heads tensor.
template <typename T>
struct FromHeadsBody {
    const T* heads;
    T* packed;
    int64_t parts;
    AttentionShape<T> shape;
    NCE_HOST_DEVICE void operator()(int64_t e) const {
        const int64_t dh = shape.head_dim, n = shape.tokens, H = shape.heads, B = shape.batch, D = shape.model_dim;
        const int64_t column = e % (parts * D), row = e / (parts * D);  // row = b·T + t
        const int64_t part = column / D, h = column % D / dh, d = column % dh, b = row / n, t = row % n;
        packed[e] = heads[(((part * B + b) * H + h) * n + t) * dh + d];
    }
};

// Row r = (b·H + h)·T + i of scores [B·H·T, T], in place: s_j = scale · raw_j, -inf where key
// j of entry b is masked; then P_i = softmax(s) (the CPU's formula, exact 0 below the
// smallest normal).
template <typename T>
struct AttentionSoftmaxRowBody {
    T* scores;
    const T* key_mask;  // [B, T], nonzero = a real key; null for none
    AttentionShape<T> shape;
    T lowest_normal_log;
    NCE_HOST_DEVICE void operator()(int64_t r, const Warp& warp) const {
        const int64_t n = shape.tokens, b = r / (shape.heads * n);
        T* row = scores + r * n;
        const T* keys = key_mask ? key_mask + b * n : nullptr;
        const T shift = warp.max<T>([&](int lane) {
            T best = -HUGE_VAL;
            for (int64_t j = lane; j < n; j += kWarpSize) {
                row[j] = keys && keys[j] == T(0) ? T(-HUGE_VAL) : shape.scale * row[j];
                best = row[j] > best ? row[j] : best;
            }
            return best;
        });
        const T total = row_exp_sum(warp, row, row, n, shift, lowest_normal_log);
        warp.each([&](int lane) {
            for (int64_t j = lane; j < n; j += kWarpSize) row[j] /= total;
        });
    }
};

// used = dropout(P), element e of [B, H, T, T].
template <typename T>
struct DropProbabilitiesBody {
    const T* probabilities;
    T* used;
    AttentionShape<T> shape;
    NCE_HOST_DEVICE void operator()(int64_t e) const { used[e] = shape.dropped(probabilities[e], e); }
};

// Row r of dP [B·H·T, T] (dP = dO V^T), in place, becomes row r of dS:
//   dP_ij <- dropout mask_ij · dP_ij,   dS_i = P_i ⊙ (dP_i - <dP_i, P_i>)
template <typename T>
struct AttentionScoreGradientRowBody {
    T* gradient;  // dP in, dS out
    const T* probabilities;
    AttentionShape<T> shape;
    NCE_HOST_DEVICE void operator()(int64_t r, const Warp& warp) const {
        const int64_t n = shape.tokens;
        T* g = gradient + r * n;
        const T* p = probabilities + r * n;
        const T total = warp.sum<T>([&](int lane) {
            T part = 0;
            for (int64_t j = lane; j < n; j += kWarpSize) {
                g[j] = shape.dropped(g[j], r * n + j);
                part += g[j] * p[j];
            }
            return part;
        });
        warp.each([&](int lane) {
            for (int64_t j = lane; j < n; j += kWarpSize) g[j] = p[j] * (g[j] - total);
        });
    }
};

}  // namespace nce::cuda
