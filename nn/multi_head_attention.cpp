#include "nn/multi_head_attention.h"

#include <cmath>
#include <limits>

namespace nce::nn {
namespace {

// The constructor's checks, run before out_proj is built from embed_dim; returns embed_dim.
int64_t checked_embed_dim(int64_t embed_dim, int64_t num_heads, double dropout) {
    NCE_CHECK(embed_dim > 0 && num_heads > 0,
              "MultiHeadAttention: embed_dim and num_heads must be positive, got {} and {}", embed_dim, num_heads);
    NCE_CHECK(embed_dim % num_heads == 0,
              "MultiHeadAttention: num_heads {} must divide embed_dim {} (each head gets embed_dim / num_heads)",
              num_heads, embed_dim);
    NCE_CHECK(dropout >= 0 && dropout < 1, "MultiHeadAttention: dropout must be in [0, 1), got {}", dropout);
    return embed_dim;
}

// Throws unless the mask is [B, T] and every row has a real token (a nonzero entry).
void check_key_padding_mask(const Tensor& key_padding_mask, int64_t batch, int64_t tokens) {
    NCE_CHECK(key_padding_mask.rank() == 2 && key_padding_mask.size(0) == batch && key_padding_mask.size(1) == tokens,
              "MultiHeadAttention: key_padding_mask {} must be [B, T] = [{}, {}] (nonzero = real token)",
              shape_string(key_padding_mask.shape()), batch, tokens);
    std::vector<double> values = key_padding_mask.to(Device::CPU).to(Dtype::Float64).to_vector();
    for (int64_t b = 0; b < batch; ++b) {
        bool has_token = false;
        for (int64_t t = 0; t < tokens; ++t) has_token = has_token || values[static_cast<size_t>(b * tokens + t)] != 0;
        NCE_CHECK(has_token,
                  "MultiHeadAttention: row {} of key_padding_mask {} has no real token; every row needs at least "
                  "one nonzero entry",
                  b, shape_string(key_padding_mask.shape()));
    }
}

// Attention with dropout on the probabilities, composed from Var ops so the dropout sits
// between the softmax and the product with v (the engine's fused op has no dropout):
//   S = q k^T / sqrt(dh) + mask_bias     [B, H, T, T]   mask_bias = 0 (real key) or -inf (padding)
//   P = softmax(S)                       [B, H, T, T]   (padding keys: P = 0)
//   o = dropout(P) v                     [B, H, T, dh]
// Its gradient is the chain of the matmul, add, softmax and dropout backwards.
Var attention_with_dropout(const Var& q, const Var& k, const Var& v, const Tensor& key_padding_mask, double p,
                           Generator& generator) {
    const int64_t batch = q.size(0), heads = q.size(1), tokens = q.size(2), head_dim = q.size(3);
    const Shape per_head{batch * heads, tokens, head_dim};
    Var scores = matmul(reshape(q, per_head), reshape(k, per_head), Transpose::Second) *
                 (1.0 / std::sqrt(static_cast<double>(head_dim)));                     // [B*H, T, T]
    scores = reshape(scores, {batch, heads, tokens, tokens});                            // [B, H, T, T]
    if (key_padding_mask.defined()) {
        Tensor mask = key_padding_mask.to(q.dtype()).to(q.value().device()).reshape({batch, 1, 1, tokens});
        Tensor mask_bias = masked_fill(zeros_like(mask), mask, -std::numeric_limits<double>::infinity());
        scores = add(scores, Var(mask_bias));                                            // a constant: no gradient
    }
    Var probabilities = dropout(softmax(scores), p, generator, /*training=*/true);      // [B, H, T, T]
    Var output = matmul(reshape(probabilities, {batch * heads, tokens, tokens}), reshape(v, per_head));  // [B*H, T, dh]
    return reshape(output, {batch, heads, tokens, head_dim});
}

}  // namespace

MultiHeadAttention::MultiHeadAttention(int64_t embed_dim, int64_t num_heads, double dropout, Generator& generator,
                                       Dtype dtype)
    : out_proj(checked_embed_dim(embed_dim, num_heads, dropout), embed_dim, generator, dtype),
      num_heads_(num_heads),
      dropout_(dropout) {
    // xavier_uniform on [3D, D]: bound = sqrt(6 / (fan_in + fan_out)) = sqrt(6 / (D + 3D)).
    const double bound = std::sqrt(6.0 / static_cast<double>(embed_dim + 3 * embed_dim));
    in_proj_weight = Var::parameter(generator.uniform({3 * embed_dim, embed_dim}, dtype, -bound, bound));
    in_proj_bias = Var::parameter(Tensor::zeros({3 * embed_dim}, dtype));
    out_proj.bias.set_value(Tensor::zeros({embed_dim}, dtype));
    register_parameter("in_proj_weight", in_proj_weight);
    register_parameter("in_proj_bias", in_proj_bias);
    register_module("out_proj", out_proj);
}

Var MultiHeadAttention::forward(const Var& x, const Tensor& key_padding_mask, Generator* generator) const {
    const int64_t dim = embed_dim();
    NCE_CHECK(x.value().rank() == 3 && x.size(2) == dim, "MultiHeadAttention: x must be [B, T, {}], got {}", dim,
              shape_string(x.shape()));
    const int64_t batch = x.size(0), tokens = x.size(1), heads = num_heads_, head_dim = dim / heads;
    if (key_padding_mask.defined()) check_key_padding_mask(key_padding_mask, batch, tokens);

    // q, k and v each from their own rows of in_proj_weight and in_proj_bias: the same
    // numbers as slicing x in_proj_weight^T + in_proj_bias [B, T, 3D] into three, but the
    // backward then slices only the [3D, D] weight (each part's gradient lands in a zeroed
    // [3D, D]) instead of the [B, T, 3D] activations, and x's three gradients are [B, T, D].
    // [B, T, D] -> [B, T, H, dh] -> [B, H, T, dh]: head h is columns h·dh .. (h+1)·dh.
    auto split_heads = [&](int64_t part) {
        Var projected = linear(x, slice(in_proj_weight, 0, part * dim, (part + 1) * dim),
                               slice(in_proj_bias, 0, part * dim, (part + 1) * dim));  // [B, T, D]
        return permute(reshape(projected, {batch, tokens, heads, head_dim}), {0, 2, 1, 3});
    };
    Var q = split_heads(0), k = split_heads(1), v = split_heads(2);  // [B, H, T, dh]

    Var heads_output;  // [B, H, T, dh]
    if (training() && dropout_ > 0) {
        NCE_CHECK(generator != nullptr,
                  "MultiHeadAttention: training mode with dropout {} needs a generator; pass one, or call "
                  "train(false)",
                  dropout_);
        heads_output = attention_with_dropout(q, k, v, key_padding_mask, dropout_, *generator);
    } else {
        heads_output = scaled_dot_product_attention(q, k, v, key_padding_mask);
    }
    // [B, H, T, dh] -> [B, T, H, dh] -> [B, T, D]: the heads side by side again.
    Var merged = reshape(permute(heads_output, {0, 2, 1, 3}), {batch, tokens, dim});
    return out_proj.forward(merged);
}

}  // namespace nce::nn
