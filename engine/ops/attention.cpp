#include <cmath>
#include <limits>

#include "engine/ops.h"

namespace nce {

namespace {

// The key padding mask as [B, 1, 1, Tk] in the scores' dtype, ready for keep_where on
// S [B, H, Tq, Tk] (same dtype and device); throws if its shape is wrong or a batch entry has no real key.
Tensor key_mask_for_scores(const Tensor& key_padding_mask, int64_t batch, int64_t keys, const Tensor& scores) {
    NCE_CHECK(key_padding_mask.rank() == 2 && key_padding_mask.size(0) == batch && key_padding_mask.size(1) == keys,
              "scaled_dot_product_attention: key_padding_mask {} does not match the keys; it must be [B, Tk] = "
              "[{}, {}]",
              shape_string(key_padding_mask.shape()), batch, keys);
    Tensor mask = key_padding_mask.to(scores.dtype()).to(scores.device());  // [B, Tk]
    Tensor is_key = keep_where(full_like(mask, 1.0), mask, 0.0);
    std::vector<double> key_counts = sum(is_key, 1).to(Device::CPU).to_vector();
    for (int64_t b = 0; b < batch; ++b)
        NCE_CHECK(key_counts[static_cast<size_t>(b)] > 0,
                  "scaled_dot_product_attention: batch entry {} has all {} keys masked in key_padding_mask {}; "
                  "every entry needs at least one real key (a nonzero mask entry)",
                  b, keys, shape_string(key_padding_mask.shape()));
    return mask.reshape({batch, 1, 1, keys});
}

}  // namespace

// Scaled dot-product attention, per batch entry b and head h.
//
//   Q: [Tq, dh]   K, V: [Tk, dh]   scale = 1 / sqrt(dh)
//   S = Q K^T · scale                       [Tq, Tk]   (masked keys: S = -inf)
//   P = softmax of each row of S            [Tq, Tk]   (masked keys: P = exactly 0)
//   O = P V                                 [Tq, dh]
//
// Backward, from dO = dL/dO, one step at a time:
//   dV = P^T dO                             [Tk, Tq]·[Tq, dh]   (O = P V is a matmul)
//   dP = dO V^T                             [Tq, dh]·[dh, Tk]
//   dS = P ⊙ (dP - rowsum(dP ⊙ P))          [Tq, Tk]   (the softmax backward, row by row:
//        ∂P_ij/∂S_ik = P_ij (δ_jk - P_ik), so dS_ik = sum_j dP_ij ∂P_ij/∂S_ik
//                                                   = P_ik (dP_ik - sum_j dP_ij P_ij))
//   dQ = dS K · scale                       [Tq, Tk]·[Tk, dh]   (S = Q K^T · scale)
//   dK = dS^T Q · scale                     [Tk, Tq]·[Tq, dh]
// A masked key has P = 0 in every row, so its dS column is 0 and its k and v get no
// gradient, as they should: they never reached the output.
// The backward keeps q, k, v and P; S is not needed.
Var scaled_dot_product_attention(const Var& q, const Var& k, const Var& v, const Tensor& key_padding_mask) {
    const Tensor &qv = q.value(), &kv = k.value(), &vv = v.value();
    check_floating(qv, "scaled_dot_product_attention", "q");
    NCE_CHECK(qv.rank() == 4 && kv.rank() == 4 && vv.rank() == 4,
              "scaled_dot_product_attention: q, k, v must be [B, H, T, dh], got q {}, k {}, v {}",
              shape_string(qv.shape()), shape_string(kv.shape()), shape_string(vv.shape()));
    NCE_CHECK(kv.dtype() == qv.dtype() && vv.dtype() == qv.dtype(),
              "scaled_dot_product_attention: q, k, v must share one dtype, got {}, {}, {}", dtype_name(qv.dtype()),
              dtype_name(kv.dtype()), dtype_name(vv.dtype()));
    NCE_CHECK(kv.shape() == vv.shape(), "scaled_dot_product_attention: k {} and v {} must have the same shape",
              shape_string(kv.shape()), shape_string(vv.shape()));
    NCE_CHECK(qv.size(0) == kv.size(0) && qv.size(1) == kv.size(1) && qv.size(3) == kv.size(3),
              "scaled_dot_product_attention: q {} and k {} must agree on B, H and dh (only Tq and Tk may differ)",
              shape_string(qv.shape()), shape_string(kv.shape()));
    const int64_t batch = qv.size(0), heads = qv.size(1), queries = qv.size(2), keys = kv.size(2),
                  head_dim = qv.size(3);
    NCE_CHECK(keys > 0 && head_dim > 0,
              "scaled_dot_product_attention: k {} has Tk = {} and dh = {}; attention needs at least one key of "
              "at least one dimension",
              shape_string(kv.shape()), keys, head_dim);
    const double scale = 1.0 / std::sqrt(static_cast<double>(head_dim));

    // Every (batch entry, head) is one matrix of a 3-D batched matmul: [B*H, T, dh].
    const Shape queries_3d{batch * heads, queries, head_dim}, keys_3d{batch * heads, keys, head_dim};
    Tensor q3 = qv.reshape(queries_3d), k3 = kv.reshape(keys_3d), v3 = vv.reshape(keys_3d);

    Tensor scores = matmul(q3, k3, Transpose::Second) * scale;  // S: [B*H, Tq, Tk]
    if (key_padding_mask.defined()) {
        Tensor key_mask = key_mask_for_scores(key_padding_mask, batch, keys, scores);  // [B, 1, 1, Tk]
        scores = keep_where(scores.reshape({batch, heads, queries, keys}), key_mask,
                             -std::numeric_limits<double>::infinity())
                     .reshape({batch * heads, queries, keys});
    }
    Tensor probabilities = softmax(scores);              // P: [B*H, Tq, Tk]
    Tensor output = matmul(probabilities, v3);           // O: [B*H, Tq, dh]

    return Var::from_op("scaled_dot_product_attention", output.reshape({batch, heads, queries, head_dim}), {q, k, v},
        [q3, k3, v3, probabilities, scale, queries_shape = qv.shape(), keys_shape = kv.shape()](
            const Tensor& output_grad) -> Grads {
            Tensor d_output = output_grad.reshape(q3.shape());                               // dO: [B*H, Tq, dh]
            Tensor d_values = matmul(probabilities, d_output, Transpose::First);            // dV = P^T dO
            Tensor d_probabilities = matmul(d_output, v3, Transpose::Second);               // dP = dO V^T
            Tensor row_dot = sum(d_probabilities * probabilities, -1, true);                // [B*H, Tq, 1]
            Tensor d_scores = probabilities * (d_probabilities - row_dot);                  // dS
            Tensor d_queries = matmul(d_scores, k3) * scale;                                // dQ = dS K · scale
            Tensor d_keys = matmul(d_scores, q3, Transpose::First) * scale;                 // dK = dS^T Q · scale
            return {d_queries.reshape(queries_shape), d_keys.reshape(keys_shape), d_values.reshape(keys_shape)};
        });
}

}  // namespace nce
