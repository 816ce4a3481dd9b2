#include <cmath>

#include "engine/ops.h"

namespace nce {

// Multi-head self-attention on packed projections, per batch entry b and head h:
//
//   qkv: [B, T, 3D] = [q | k | v], each [B, T, D]; head h is columns h·dh .. (h+1)·dh
//   Q, K, V: [T, dh] (head h of q, k, v)          scale = 1 / sqrt(dh)
//   S = Q K^T · scale                      [T, T]   (masked keys: S = -inf)
//   P = softmax of each row of S           [T, T]   (masked keys: P = exactly 0)
//   R = P ⊙ M / keep                       [T, T]   dropout: M_ij = 1 with probability keep
//   O = R V                                [T, dh]  -> columns h·dh .. (h+1)·dh of out [B, T, D]
//
// Backward, from dO (head h's columns of dL/dout), one step at a time:
//   dV = R^T dO                            [T, T]·[T, dh]   (O = R V is a matmul)
//   dR = dO V^T                            [T, dh]·[dh, T]
//   dP = dR ⊙ M / keep                     (R is P times a constant)
//   dS = P ⊙ (dP - rowsum(dP ⊙ P))         (the softmax backward: ∂P_ij/∂S_ik = P_ij (δ_jk - P_ik),
//                                           so dS_ik = sum_j dP_ij P_ij (δ_jk - P_ik)
//                                                    = P_ik (dP_ik - sum_j dP_ij P_ij))
//   dQ = dS K · scale                      [T, T]·[T, dh]   (S = Q K^T · scale)
//   dK = dS^T Q · scale                    [T, T]·[T, dh]
// and dQ, dK, dV go to head h's columns of dL/dqkv. A masked key has P = 0 in every row,
// so its dS column is 0 and its k and v get no gradient: they never reached the output.
//
// This is the composition reshape -> permute -> matmul -> softmax -> dropout -> matmul ->
// permute, in one op: the heads are strided views into qkv instead of permuted copies, and
// each head's [T, T] blocks stay in one thread's cache while they are used. The mask M is
// counter-based draws (random.h): P [B, H, T, T] is one Bernoulli fill at the offset, the
// same draws dropout() would make on P, so the backward draws M again instead of storing it.
// The backward keeps qkv and P.
Var packed_attention(const Var& qkv, const Tensor& key_padding_mask, int64_t heads, double dropout,
                     Generator* generator) {
    const Tensor& packed = qkv.value();
    check_floating(packed, "packed_attention", "qkv");
    NCE_CHECK(heads > 0, "packed_attention: heads must be positive, got {}", heads);
    NCE_CHECK(packed.rank() == 3 && packed.size(2) % (3 * heads) == 0 && packed.size(1) > 0,
              "packed_attention: qkv must be [B, T >= 1, 3D] with D divisible by heads = {}, got {}", heads,
              shape_string(packed.shape()));
    NCE_CHECK(dropout >= 0 && dropout < 1, "packed_attention: dropout must be in [0, 1), got {}", dropout);
    NCE_CHECK(dropout == 0 || generator != nullptr,
              "packed_attention: dropout {} needs a generator for its masks; pass one, or use dropout 0", dropout);
    const int64_t batch = packed.size(0), tokens = packed.size(1);

    Tensor key_mask;  // [B, T] in qkv's dtype, nonzero = real key
    if (key_padding_mask.defined()) {
        NCE_CHECK(key_padding_mask.rank() == 2 && key_padding_mask.size(0) == batch &&
                      key_padding_mask.size(1) == tokens,
                  "packed_attention: key_padding_mask {} must be [B, T] = [{}, {}] (nonzero = real token)",
                  shape_string(key_padding_mask.shape()), batch, tokens);
        key_mask = key_padding_mask.to(packed.dtype()).to(packed.device());
        backend_for(key_mask.device()).check_rows_nonzero(
            key_mask, "packed_attention: row {} of key_padding_mask " + shape_string(key_padding_mask.shape()) +
                          " has no real token; every row needs at least one nonzero entry");
    }

    PackedAttention attention;
    attention.heads = heads;
    attention.keep = 1 - dropout;
    if (dropout > 0) {
        attention.seed = generator->seed();
        attention.offset = generator->take(static_cast<uint64_t>(batch * heads * tokens * tokens));
    }
    auto [out, kept_probabilities] = packed_attention(packed, key_mask, attention);
    Tensor probabilities = kept_probabilities;  // a named copy: clang 14 cannot capture a structured binding
    return Var::from_op("packed_attention", std::move(out), {qkv},
        [packed, probabilities, attention](const Tensor& dout) -> Grads {
            return {packed_attention_backward(packed, probabilities, dout, attention)};
        });
}

}  // namespace nce
