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
//   out   = L2( [ L2(mean part) ; a L2(x) ] )                   [B, D' + E] (D' = out_dim or D)
//
// Each token lights a few of the E units and a text keeps, per unit, its strongest token: a
// bag of many more distinct features than D mean-pooled numbers can hold, which is what
// matching a query's words against a passage's needs. The mean part is kept beside it: at
// initialisation every text's x is nearly the same vector (each unit reaches its high value
// on some token of any long text), and the mean part gives the first steps a signal while
// the lexical half learns.
//
// The part weight a = exp(lexical_log_weight) is learned (from a = 1). Both halves are unit
// vectors and the whole is re-normalised, so the score of two texts is a weighted mean of the
// halves' cosines,
//   score = (cos_mean + a^2 cos_lexical) / (1 + a^2),
// and the model, not a constant, decides how much the lexical half counts. (Fixed equal
// halves held corpus pretraining back: on the beer dump the pretrained model's MRR@10 went
// from .465 to .556 when the term weights' part weight c below was learned; it learned
// c = 2.7, 88% of the score.) Built from the engine's layer_norm, affine, relu, log, mul,
// exp, max, masked_mean_pool, l2_normalize and concat ops, so its gradient is theirs;
// the max sends a unit's gradient to its first maximal token. (It takes the max of the
// projections first and applies log(1 + relu) to that, the same numbers: text_encoder.cpp.)
//
// With term_weights a lexical part of another kind has one number per vocabulary piece,
// written only by the text's own tokens (after uniCOIL: Lin and Ma 2021, and DeepImpact), so a
// query and a passage meet exactly on the pieces they share, as BM25's words do:
//
//   w_bt  = log(1 + relu(term_weight(term_norm(h_bt)) + term_bias[id_bt]))   [B, T]  >= 0
//   x_bv  = log(1 + sum over real tokens t with id_bt = v of w_bt)  [B, V]  (0 for pieces not in it)
//   out   = L2( [ L2(mean part) ; c L2(x) ] )                    [B, D' + V]
//
// with c = exp(term_log_weight) learned as a is. With both heads the parts are
// [mean ; a max-pooled ; c terms], each a unit vector times its weight, re-normalised as one
// (score = (cos_mean + a^2 cos_max + c^2 cos_terms) / (1 + a^2 + c^2)).
//
// w is what the model learns: how much a token, in its context, matters. term_bias gives each
// piece its own offset (a [V, 1] table, from 0), the share of the weight that context does not
// change, as BM25's idf; the contextual part adds to it. The outer log saturates a piece that
// repeats (BM25's k1 does the same). The bias of term_weight starts at 1, so at
// initialisation every token weighs about log 2 and x is a bag of the text's pieces: the
// first steps already match pieces. Built from layer_norm, affine, index_select, add, relu,
// log, mul, exp and index_add (the scatter-add whose backward is index_select).
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
    // or + vocab_size with term_weights; unit rows.
    // Token t always gets position t, so left and right padding give different embeddings.
    Var encode(const Tensor& input, const Tensor& mask, Generator* generator) override;
    Var* log_tau() override { return config_.learnable_temperature ? &log_tau_ : nullptr; }

    Embedding token_embedding;     // [vocab_size, d_model]
    Embedding position_embedding;  // [max_len, d_model]
    TransformerEncoder encoder;
    std::optional<Linear> output_proj;  // [out_dim, d_model], only when out_dim > 0
    std::optional<LayerNorm> lexical_norm;  // [d_model], only when lexical_dim > 0
    std::optional<Linear> lexical_proj;     // [lexical_dim, d_model], only when lexical_dim > 0
    std::optional<LayerNorm> term_norm;     // [d_model], only with term_weights
    std::optional<Linear> term_weight;      // [1, d_model], only with term_weights
    std::optional<Embedding> term_bias;     // [vocab_size, 1], only with term_weights
    // log c [1], the terms' part weight; nullptr without term_weights.
    Var* term_log_weight() { return config_.term_weights ? &term_log_weight_ : nullptr; }

private:
    // The term-weight head's x [B, vocab_size] for token states [B, T, D] (text_encoder.h).
    Var term_vector(const Var& states, const Tensor& input, const Tensor& real_tokens);

    Var log_tau_;  // [1], registered only with config.learnable_temperature
    Var lexical_log_weight_;  // [1] log a, only when lexical_dim > 0
    Var term_log_weight_;     // [1] log c, only with term_weights
};

}  // namespace nce::nn
