// Multi-head attention over packed qkv, forward and backward, as a CUDA engineer writes it:
// the heads copied out to [3, B, H, T, dh] once, the products as strided-batched GEMMs over
// the B·H heads (cuBLAS), the softmax and its backward one warp per row, the heads merged
// back in one launch (attention_kernels.h has the bodies).
//
//   forward:  S = Q K^T (GEMM)  P = softmax(scale · S, masked)  O = dropout(P) V (GEMM)
//   backward: dP = dO V^T (GEMM)  dS = P ⊙ (m·dP - <m·dP, P>)   dQ = scale · dS K
//             dK = scale · dS^T Q   dV = dropout(P)^T dO            (GEMMs)
#include <cmath>
#include <limits>

#include "engine/cpu/random_kernels.h"
#include "engine/cuda/attention_kernels.h"
#include "engine/cuda/cuda_backend.h"
#include "engine/cuda/device_tensor.h"
#include "engine/cuda/launch.h"

namespace nce::cuda {
namespace {

template <typename T>
AttentionShape<T> attention_shape(const Tensor& qkv, const PackedAttention& attention) {
    AttentionShape<T> shape;
    shape.batch = qkv.size(0);
    shape.tokens = qkv.size(1);
    shape.model_dim = qkv.size(2) / 3;
    shape.heads = attention.heads;
    shape.head_dim = shape.model_dim / attention.heads;
    shape.scale = static_cast<T>(1.0 / std::sqrt(static_cast<double>(shape.head_dim)));
    shape.drop = attention.keep < 1;
    shape.seed = attention.seed;
    shape.offset = attention.offset;
    shape.threshold = cpu::bernoulli_threshold(attention.keep);
    shape.inverse_keep = static_cast<T>(1 / attention.keep);
    return shape;
}

// Part `part` of a [parts, B, H, T, dh] heads tensor as [B·H, T, dh] (a view).
Tensor part_of(const Tensor& heads, int64_t part, int64_t entries, int64_t tokens, int64_t head_dim) {
    return heads.rows(part, part + 1).reshape(Shape{entries, tokens, head_dim});
}

// q, k and v of packed qkv [B, T, 3D], each [B·H, T, dh], copied out in one launch.
struct QueryKeyValue {
    Tensor storage;  // [3, B, H, T, dh]
    Tensor q, k, v;
};

template <typename T>
Tensor to_heads(const Tensor& packed, int64_t parts, const AttentionShape<T>& shape, const char* op) {
    // (Sizes copied to plain integers first: nvcc's front end rejects a dependent member in a braced list.)
    const int64_t batch = shape.batch, head_count = shape.heads, tokens = shape.tokens, head_dim = shape.head_dim;
    Tensor heads = Tensor::empty(Shape{parts, batch, head_count, tokens, head_dim}, packed.dtype(), Device::CUDA);
    launch(heads.numel(), ToHeadsBody<T>{device_data<T>(packed, op), device_data<T>(heads, op), parts, shape});
    return heads;
}

template <typename T>
QueryKeyValue split_qkv(const Tensor& qkv, const AttentionShape<T>& shape, const char* op) {
    const int64_t entries = shape.batch * shape.heads, n = shape.tokens, dh = shape.head_dim;
    QueryKeyValue parts;
    parts.storage = to_heads<T>(qkv, 3, shape, op);
    parts.q = part_of(parts.storage, 0, entries, n, dh);
    parts.k = part_of(parts.storage, 1, entries, n, dh);
    parts.v = part_of(parts.storage, 2, entries, n, dh);
    return parts;
}

// dropout(P), or P itself without dropout.
template <typename T>
Tensor used_probabilities(const Tensor& probabilities, const AttentionShape<T>& shape, const char* op) {
    if (!shape.drop) return probabilities;
    Tensor used = Tensor::empty(probabilities.shape(), probabilities.dtype(), Device::CUDA);
    launch(used.numel(),
           DropProbabilitiesBody<T>{device_data<T>(probabilities, op), device_data<T>(used, op), shape});
    return used;
}

}  // namespace

// qkv [B, T, 3D], key_mask [B, T] or undefined -> probabilities [B, H, T, T], out [B, T, D].
void CudaBackend::packed_attention(const Tensor& qkv, const Tensor& key_mask, const PackedAttention& attention,
                                   Tensor& probabilities, Tensor& out) {
    dispatch_floating(qkv.dtype(), "packed_attention", [&](auto zero) {
        using T = decltype(zero);
        const char* op = "packed_attention";
        const AttentionShape<T> s = attention_shape<T>(qkv, attention);
        const int64_t batch = s.batch, head_count = s.heads, n = s.tokens, dh = s.head_dim, entries = batch * head_count;
        const QueryKeyValue heads = split_qkv<T>(qkv, s, op);
        const Tensor &q = heads.q, &k = heads.k, &v = heads.v;
        Tensor scores = probabilities.reshape(Shape{entries, n, n});
        gemm(q, false, k, true, scores, 1.0, 0.0);  // S = Q K^T   [B·H, T, T]
        launch_rows(entries * n,
                    AttentionSoftmaxRowBody<T>{device_data<T>(scores, op),
                                               key_mask.defined() ? device_data<T>(key_mask, op) : nullptr, s,
                                               std::log(std::numeric_limits<T>::min())});
        const Tensor used = used_probabilities<T>(probabilities, s, op).reshape(Shape{entries, n, n});
        Tensor head_out = Tensor::empty(Shape{1, batch, head_count, n, dh}, qkv.dtype(), Device::CUDA);
        Tensor o = part_of(head_out, 0, entries, n, dh);
        gemm(used, false, v, false, o, 1.0, 0.0);  // O = dropout(P) V   [B·H, T, dh]
        launch(out.numel(), FromHeadsBody<T>{device_data<T>(head_out, op), device_data<T>(out, op), 1, s});
    });
}

// dout [B, T, D] -> dqkv [B, T, 3D].
void CudaBackend::packed_attention_backward(const Tensor& qkv, const Tensor& probabilities, const Tensor& dout,
                                            const PackedAttention& attention, Tensor& dqkv) {
    dispatch_floating(qkv.dtype(), "packed_attention backward", [&](auto zero) {
        using T = decltype(zero);
        const char* op = "packed_attention backward";
        const AttentionShape<T> s = attention_shape<T>(qkv, attention);
        const int64_t batch = s.batch, head_count = s.heads, n = s.tokens, dh = s.head_dim, entries = batch * head_count;
        const QueryKeyValue heads = split_qkv<T>(qkv, s, op);
        const Tensor &q = heads.q, &k = heads.k, &v = heads.v;
        const Tensor d_out = part_of(to_heads<T>(dout, 1, s, op), 0, entries, n, dh);  // [B·H, T, dh]
        const Tensor p = probabilities.reshape(Shape{entries, n, n});
        Tensor score_gradient = Tensor::empty(Shape{entries, n, n}, qkv.dtype(), Device::CUDA);
        gemm(d_out, false, v, true, score_gradient, 1.0, 0.0);  // dP = dO V^T
        launch_rows(entries * n, AttentionScoreGradientRowBody<T>{device_data<T>(score_gradient, op),
                                                                  device_data<T>(p, op), s});  // dS
        Tensor gradients = Tensor::empty(Shape{3, batch, head_count, n, dh}, qkv.dtype(), Device::CUDA);
        Tensor dq = part_of(gradients, 0, entries, n, dh), dk = part_of(gradients, 1, entries, n, dh),
               dv = part_of(gradients, 2, entries, n, dh);
        const double scale = static_cast<double>(s.scale);
        gemm(score_gradient, false, k, false, dq, scale, 0.0);  // dQ = scale · dS K
        gemm(score_gradient, true, q, false, dk, scale, 0.0);   // dK = scale · dS^T Q
        const Tensor used = used_probabilities<T>(p, s, op);
        gemm(used, true, d_out, false, dv, 1.0, 0.0);           // dV = dropout(P)^T dO
        launch(dqkv.numel(), FromHeadsBody<T>{device_data<T>(gradients, op), device_data<T>(dqkv, op), 3, s});
    });
}

}  // namespace nce::cuda
