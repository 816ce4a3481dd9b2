// TextEncoder: embeds a sequence of token ids into one unit vector.
//
//   ids [B, T] -> token_embedding + position_embedding(0 .. T-1) -> encoder (padding
//   masked) -> mean over the real tokens -> output_proj (when out_dim > 0) -> L2-normalise
#pragma once
#include <optional>

#include "nn/embedding.h"
#include "nn/linear.h"
#include "nn/model.h"
#include "nn/transformer_encoder.h"

namespace nce::nn {

class TextEncoder : public EmbeddingModel {
public:
    // config.kind must be "text_encoder", with vocab_size > 0, max_len > 0, out_dim >= 0.
    TextEncoder(const ModelConfig& config, Generator& generator, Dtype dtype = Dtype::Float32);

    // input: int64 ids [B, T] with T <= max_len and every id in [0, vocab_size); mask [B, T]
    // (nonzero = token; every row needs a token) -> [B, out_dim or d_model], unit rows.
    // Token t always gets position t, so left and right padding give different embeddings.
    Var encode(const Tensor& input, const Tensor& mask, Generator* generator) override;
    Var* log_tau() override { return config_.learnable_temperature ? &log_tau_ : nullptr; }

    Embedding token_embedding;     // [vocab_size, d_model]
    Embedding position_embedding;  // [max_len, d_model]
    TransformerEncoder encoder;
    std::optional<Linear> output_proj;  // [out_dim, d_model], only when out_dim > 0

private:
    Var log_tau_;  // [1], registered only with config.learnable_temperature
};

}  // namespace nce::nn
