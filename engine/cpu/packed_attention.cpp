// Multi-head attention over packed qkv, one (batch entry, head) at a time on one thread:
// q, k and v of a head are strided views into qkv (leading dimension 3D), so no head is
// copied out, and its [T, T] scores stay in a thread's scratch while they are used. The
// math and its derivation are in engine/ops/packed_attention.cpp.
#include <Eigen/Core>
#include <limits>
#include <vector>

#include "engine/blas.h"
#include "engine/cpu/cpu_backend.h"
#include "engine/cpu/exact_exp.h"
#include "engine/cpu/random_kernels.h"

namespace nce::cpu {
namespace {

template <typename T>
using Row = Eigen::Array<T, Eigen::Dynamic, 1>;

// The pointers of entry (b, h).
template <typename T>
struct Head {
    const T* q;  // [T, dh], leading dimension 3D
    const T* k;
    const T* v;
    int64_t first_element;  // its P block's first element in [B, H, T, T]
};

struct Sizes {
    int64_t batch, tokens, heads, head_dim, model_dim;  // model_dim = D = heads · head_dim
    double scale;
};

Sizes sizes_of(const Tensor& qkv, int64_t heads) {
    Sizes s;
    s.batch = qkv.size(0);
    s.tokens = qkv.size(1);
    s.model_dim = qkv.size(2) / 3;
    s.heads = heads;
    s.head_dim = s.model_dim / heads;
    s.scale = 1.0 / std::sqrt(static_cast<double>(s.head_dim));
    return s;
}

template <typename T>
Head<T> head_of(const T* qkv, const Sizes& s, int64_t entry) {
    const int64_t b = entry / s.heads, h = entry % s.heads;
    const T* q = qkv + b * s.tokens * 3 * s.model_dim + h * s.head_dim;
    return {q, q + s.model_dim, q + 2 * s.model_dim, entry * s.tokens * s.tokens};
}

// Scratch for one thread: two [T, T] blocks.
template <typename T>
T* scratch(int64_t elements) {
    thread_local std::vector<T> buffer;
    if (static_cast<int64_t>(buffer.size()) < elements) buffer.resize(static_cast<size_t>(elements));
    return buffer.data();
}

}  // namespace

void CpuBackend::packed_attention(const Tensor& qkv, const Tensor& key_mask, const PackedAttention& attention,
                                  Tensor& probabilities, Tensor& out) {
    dispatch_floating(qkv.dtype(), "packed_attention", [&](auto zero) {
        using T = decltype(zero);
        const Sizes s = sizes_of(qkv, attention.heads);
        const int64_t n = s.tokens, ld_qkv = 3 * s.model_dim;
        const T* qkv_data = qkv.data<T>();
        const T* mask = key_mask.defined() ? key_mask.data<T>() : nullptr;
        T* p_data = probabilities.data<T>();
        T* out_data = out.data<T>();
        const bool drop = attention.keep < 1;
        const uint64_t threshold = bernoulli_threshold(attention.keep);
        const T inverse_keep = static_cast<T>(1 / attention.keep);
        parallel_for(s.batch * s.heads, 1, [&](int64_t begin, int64_t end) {
            T* dropped = drop ? scratch<T>(n * n) : nullptr;
            for (int64_t entry = begin; entry < end; ++entry) {
                const Head<T> head = head_of(qkv_data, s, entry);
                const int64_t b = entry / s.heads, h = entry % s.heads;
                T* p = p_data + head.first_element;  // [T, T]
                // S = Q K^T · scale, into P's block.
                blas_gemm_on_this_thread<T>(false, true, n, n, s.head_dim, static_cast<T>(s.scale), head.q, ld_qkv,
                                            head.k, ld_qkv, T(0), p, n);
                const T* key_is_real = mask ? mask + b * n : nullptr;
                for (int64_t i = 0; i < n; ++i) {
                    Eigen::Map<Row<T>> row(p + i * n, n);
                    if (key_is_real)
                        for (int64_t j = 0; j < n; ++j)
                            if (key_is_real[j] == T(0)) row[j] = -std::numeric_limits<T>::infinity();
                    row = exact_exp(row - row.maxCoeff());  // exactly 0 for a masked key
                    row /= row.sum();
                }
                const T* used = p;  // dropout(P)
                if (drop) {
                    dropout_elements<T>(p, dropped, n * n, static_cast<uint64_t>(head.first_element), attention.seed,
                                        attention.offset, threshold, inverse_keep);
                    used = dropped;
                }
                // O = dropout(P) V, into columns h·dh of out [B, T, D].
                blas_gemm_on_this_thread<T>(false, false, n, s.head_dim, n, T(1), used, n, head.v, ld_qkv, T(0),
                                            out_data + b * n * s.model_dim + h * s.head_dim, s.model_dim);
            }
        });
    });
}

void CpuBackend::packed_attention_backward(const Tensor& qkv, const Tensor& probabilities, const Tensor& dout,
                                           const PackedAttention& attention, Tensor& dqkv) {
    dispatch_floating(qkv.dtype(), "packed_attention backward", [&](auto zero) {
        using T = decltype(zero);
        const Sizes s = sizes_of(qkv, attention.heads);
        const int64_t n = s.tokens, ld_qkv = 3 * s.model_dim;
        const T* qkv_data = qkv.data<T>();
        const T* p_data = probabilities.data<T>();
        const T* dout_data = dout.data<T>();
        T* dqkv_data = dqkv.data<T>();
        const bool drop = attention.keep < 1;
        const uint64_t threshold = bernoulli_threshold(attention.keep);
        const T inverse_keep = static_cast<T>(1 / attention.keep);
        const T scale = static_cast<T>(s.scale);
        parallel_for(s.batch * s.heads, 1, [&](int64_t begin, int64_t end) {
            T* scratch_r = scratch<T>(2 * n * n);  // R = dropout(P), later dP
            T* second = scratch_r + n * n;
            for (int64_t entry = begin; entry < end; ++entry) {
                const Head<T> head = head_of(qkv_data, s, entry);
                const int64_t b = entry / s.heads, h = entry % s.heads;
                const uint64_t first = static_cast<uint64_t>(head.first_element);
                const T* p = p_data + head.first_element;
                const T* d_out = dout_data + b * n * s.model_dim + h * s.head_dim;  // dO [T, dh], ld D
                T* d_q = dqkv_data + b * n * ld_qkv + h * s.head_dim;
                T* d_k = d_q + s.model_dim;
                T* d_v = d_q + 2 * s.model_dim;
                // dV = dropout(P)^T dO
                const T* used = p;
                if (drop) {
                    dropout_elements<T>(p, scratch_r, n * n, first, attention.seed, attention.offset, threshold,
                                        inverse_keep);
                    used = scratch_r;
                }
                blas_gemm_on_this_thread<T>(true, false, n, s.head_dim, n, T(1), used, n, d_out, s.model_dim, T(0), d_v,
                                            ld_qkv);
                // d dropout(P) = dO V^T, then dP = the same mask on it.
                blas_gemm_on_this_thread<T>(false, true, n, n, s.head_dim, T(1), d_out, s.model_dim, head.v, ld_qkv,
                                            T(0), second, n);
                T* d_p = second;
                if (drop) {
                    dropout_elements<T>(second, scratch_r, n * n, first, attention.seed, attention.offset, threshold,
                                        inverse_keep);
                    d_p = scratch_r;
                }
                // dS = P ⊙ (dP - rowsum(dP ⊙ P)), written over d_p.
                for (int64_t i = 0; i < n; ++i) {
                    Eigen::Map<const Row<T>> p_row(p + i * n, n);
                    Eigen::Map<Row<T>> g(d_p + i * n, n);
                    g = p_row * (g - (g * p_row).sum());
                }
                // dQ = dS K · scale, dK = dS^T Q · scale
                blas_gemm_on_this_thread<T>(false, false, n, s.head_dim, n, scale, d_p, n, head.k, ld_qkv, T(0), d_q,
                                            ld_qkv);
                blas_gemm_on_this_thread<T>(true, false, n, s.head_dim, n, scale, d_p, n, head.q, ld_qkv, T(0), d_k,
                                            ld_qkv);
            }
        });
    });
}

}  // namespace nce::cpu
