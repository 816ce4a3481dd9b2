// TextEncoder: embeds a sequence of token ids into one unit vector.
//
//   ids [B, T] -> token_embedding + position_embedding(0 .. T-1) -> encoder (padding
//   masked) -> h [B, T, D] -> mean over the real tokens -> output_proj (when out_dim > 0)
//   -> L2-normalise
//
// With lexical_dim = E > 0 a lexical head reads the same token states (after SPLADE,
// Formal et al. 2021, which max-pools log(1 + relu) of each token's expansion):
//
//   s_bte = log(1 + relu(lexical_proj(lexical_norm(h_bt)))_e)   [B, T, E]  >= 0
//   x_be  = max over the real tokens t of s_bte                 [B, E]     (0 for padding)
//   out   = L2( [ L2(mean part) ; L2(x) ] )                     [B, D' + E] (D' = out_dim or D)
//
// Each token lights a few of the E units and a text keeps, per unit, its strongest token: a
// bag of many more distinct features than D mean-pooled numbers can hold, which is what
// matching a query's words against a passage's needs. The mean part is kept beside it (both
// halves unit vectors, the whole re-normalised, so a score is the mean of the two halves'
// cosines): at initialisation every text's x is nearly the same vector (each unit reaches
// its high value on some token of any long text), and the mean part gives the first steps a
// signal while the lexical half learns. Built from the engine's layer_norm, affine, relu,
// log, mul, max, masked_mean_pool, l2_normalize and concat ops, so its gradient is theirs;
// the max sends a unit's gradient to its first maximal token. (It takes the max of the
// projections first and applies log(1 + relu) to that, the same numbers: text_encoder.cpp.)
#pragma once
#include <optional>

#include "nn/embedding.h"
#include "nn/layer_norm.h"
#include "nn/linear.h"
#include "nn/model.h"
#include "nn/transformer_encoder.h"

namespace nce::nn {

class TextEncoder : public EmbeddingModel {
public:
    // config.kind must be "text_encoder", with vocab_size > 0, max_len > 0, out_dim >= 0.
    TextEncoder(const ModelConfig& config, Generator& generator, Dtype dtype = Dtype::Float32);

    // input: int64 ids [B, T] with T <= max_len and every id in [0, vocab_size); mask [B, T]
    // (nonzero = token; every row needs a token) -> [B, (out_dim or d_model) + lexical_dim],
    // unit rows.
    // Token t always gets position t, so left and right padding give different embeddings.
    Var encode(const Tensor& input, const Tensor& mask, Generator* generator) override;
    Var* log_tau() override { return config_.learnable_temperature ? &log_tau_ : nullptr; }

    Embedding token_embedding;     // [vocab_size, d_model]
    Embedding position_embedding;  // [max_len, d_model]
    TransformerEncoder encoder;
    std::optional<Linear> output_proj;  // [out_dim, d_model], only when out_dim > 0
    std::optional<LayerNorm> lexical_norm;  // [d_model], only when lexical_dim > 0
    std::optional<Linear> lexical_proj;     // [lexical_dim, d_model], only when lexical_dim > 0

private:
    Var log_tau_;  // [1], registered only with config.learnable_temperature
};

}  // namespace nce::nn
