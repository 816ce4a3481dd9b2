// Bodies of multi-head attention over packed qkv [B, T, 3D] (head h: columns h·dh ..
// (h+1)·dh of each of q, k, v; dh = D / H), one thread per (batch entry, head, row). The
// math is engine/ops/packed_attention.cpp's and the CPU backend's
// (engine/cpu/packed_attention.cpp), written as loops over one row instead of GEMMs.
// Dropout on P: element e of P [B, H, T, T] is kept as random_bits::bernoulli_kept(seed,
// offset, e, threshold) says, the CPU's draw for the same element.
#pragma once
#include <cstdint>

#include "engine/cuda/device_math.h"
#include "engine/cuda/host_device.h"
#include "engine/cuda/softmax_kernels.h"
#include "engine/random.h"

namespace nce::cuda {

// The sizes of one packed attention, and the dropout on its probabilities.
template <typename T>
struct AttentionShape {
    int64_t tokens, heads, head_dim, model_dim;  // T, H, dh, D = H · dh
    T scale;                                     // 1 / sqrt(dh)
    bool drop;                                   // keep < 1
    uint64_t seed, offset, threshold;
    T inverse_keep;

    // Row i of q (part 0), k (1) or v (2) of entry (b, h) inside qkv [B, T, 3D].
    NCE_HOST_DEVICE int64_t qkv_row(int64_t b, int64_t h, int64_t i, int part) const {
        return (b * tokens + i) * 3 * model_dim + part * model_dim + h * head_dim;
    }
    // P element e after dropout: p · (kept ? 1 / keep : 0), or p without dropout.
    NCE_HOST_DEVICE T dropped(T p, int64_t e) const {
        if (!drop) return p;
        return p * (random_bits::bernoulli_kept(seed, offset, static_cast<uint64_t>(e), threshold) ? inverse_keep
                                                                                                   : T(0));
    }
};

// Thread id = (b · H + h) · T + i. Writes row i of P [B, H, T, T] and row i of head h in
// out [B, T, D]:
//   s_j = scale · <q_i, k_j>  (-inf where key j is masked),  P_i = softmax(s),
//   out_i = sum_j dropout(P)_ij v_j
template <typename T>
struct AttentionRowBody {
    const T* qkv;
    const T* key_mask;  // [B, T], nonzero = a real key; null for none
    T* probabilities;
    T* out;
    AttentionShape<T> shape;
    T lowest_normal_log;
    NCE_HOST_DEVICE void operator()(int64_t id) const {
        const int64_t n = shape.tokens, dh = shape.head_dim;
        const int64_t entry = id / n, i = id % n, b = entry / shape.heads, h = entry % shape.heads;
        const T* q = qkv + shape.qkv_row(b, h, i, 0);
        T* p = probabilities + id * n;
        for (int64_t j = 0; j < n; ++j) {
            const T* k = qkv + shape.qkv_row(b, h, j, 1);
            T score = 0;
            for (int64_t d = 0; d < dh; ++d) score += q[d] * k[d];
            p[j] = key_mask && key_mask[b * n + j] == T(0) ? -T(INFINITY) : shape.scale * score;
        }
        T shift = p[0];
        for (int64_t j = 1; j < n; ++j) shift = p[j] > shift ? p[j] : shift;
        T total = 0;
        for (int64_t j = 0; j < n; ++j) {
            p[j] = flushed_exp(p[j] - shift, lowest_normal_log);
            total += p[j];
        }
        for (int64_t j = 0; j < n; ++j) p[j] /= total;
        T* o = out + (b * n + i) * shape.model_dim + h * dh;
        for (int64_t d = 0; d < dh; ++d) o[d] = 0;
        for (int64_t j = 0; j < n; ++j) {
            const T used = shape.dropped(p[j], id * n + j);
            const T* v = qkv + shape.qkv_row(b, h, j, 2);
            for (int64_t d = 0; d < dh; ++d) o[d] += used * v[d];
        }
    }
};

// The backward's first pass, thread id = (b · H + h) · T + i, owning row i of dS and of dQ:
//   dP_ij = dropout mask_ij · <dO_i, v_j>,   dS_i = P_i ⊙ (dP_i - <dP_i, P_i>),
//   dQ_i = scale · sum_j dS_ij k_j
template <typename T>
struct AttentionQueryGradientBody {
    const T* qkv;
    const T* probabilities;
    const T* dout;  // [B, T, D]
    T* score_gradient;  // dS [B, H, T, T]
    T* dqkv;
    AttentionShape<T> shape;
    NCE_HOST_DEVICE void operator()(int64_t id) const {
        const int64_t n = shape.tokens, dh = shape.head_dim;
        const int64_t entry = id / n, i = id % n, b = entry / shape.heads, h = entry % shape.heads;
        const T* p = probabilities + id * n;
        const T* d_out = dout + (b * n + i) * shape.model_dim + h * dh;
        T* d_s = score_gradient + id * n;
        T total = 0;
        for (int64_t j = 0; j < n; ++j) {
            const T* v = qkv + shape.qkv_row(b, h, j, 2);
            T dot = 0;
            for (int64_t d = 0; d < dh; ++d) dot += d_out[d] * v[d];
            d_s[j] = shape.dropped(dot, id * n + j);  // dP_ij for now
            total += d_s[j] * p[j];
        }
        for (int64_t j = 0; j < n; ++j) d_s[j] = p[j] * (d_s[j] - total);
        T* d_q = dqkv + shape.qkv_row(b, h, i, 0);
        for (int64_t d = 0; d < dh; ++d) d_q[d] = 0;
        for (int64_t j = 0; j < n; ++j) {
            const T* k = qkv + shape.qkv_row(b, h, j, 1);
            for (int64_t d = 0; d < dh; ++d) d_q[d] += d_s[j] * k[d];
        }
        for (int64_t d = 0; d < dh; ++d) d_q[d] *= shape.scale;
    }
};

// The second pass, thread id = (b · H + h) · T + j, owning row j of dK and dV (it reads the
// first pass's dS, finished before this launch starts):
//   dV_j = sum_i dropout(P)_ij dO_i,   dK_j = scale · sum_i dS_ij q_i
template <typename T>
struct AttentionKeyValueGradientBody {
    const T* qkv;
    const T* probabilities;
    const T* dout;
    const T* score_gradient;
    T* dqkv;
    AttentionShape<T> shape;
    NCE_HOST_DEVICE void operator()(int64_t id) const {
        const int64_t n = shape.tokens, dh = shape.head_dim;
        const int64_t entry = id / n, j = id % n, b = entry / shape.heads, h = entry % shape.heads;
        T* d_k = dqkv + shape.qkv_row(b, h, j, 1);
        T* d_v = dqkv + shape.qkv_row(b, h, j, 2);
        for (int64_t d = 0; d < dh; ++d) d_k[d] = d_v[d] = 0;
        for (int64_t i = 0; i < n; ++i) {
            const int64_t e = (entry * n + i) * n + j;  // element (i, j) of the entry's P block
            const T used = shape.dropped(probabilities[e], e);
            const T d_s = score_gradient[e];
            const T* d_out = dout + (b * n + i) * shape.model_dim + h * dh;
            const T* q = qkv + shape.qkv_row(b, h, i, 0);
            for (int64_t d = 0; d < dh; ++d) {
                d_v[d] += used * d_out[d];
                d_k[d] += d_s * q[d];
            }
        }
        for (int64_t d = 0; d < dh; ++d) d_k[d] *= shape.scale;
    }
};

}  // namespace nce::cuda
