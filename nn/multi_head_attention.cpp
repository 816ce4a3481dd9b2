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
    // packed_attention checks the key padding mask: [B, T], a real token in every row.
    // [B, T, D] -> qkv [B, T, 3D] = [q | k | v] in one GEMM; the packed attention reads each
    // head's columns in place and returns the heads side by side again, [B, T, D].
    Var qkv = linear(x, in_proj_weight, in_proj_bias);
    const bool drop = training() && dropout_ > 0;
    NCE_CHECK(!drop || generator != nullptr,
              "MultiHeadAttention: training mode with dropout {} needs a generator; pass one, or call "
              "train(false)",
              dropout_);
    Var merged = packed_attention(qkv, key_padding_mask, num_heads_, drop ? dropout_ : 0.0, generator);  // [B, T, D]
    return out_proj.forward(merged);
}

}  // namespace nce::nn
