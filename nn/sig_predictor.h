// SigPredictor: embeds a sequence of feature vectors (one per token, e.g. per function
// signature part) into one unit vector.
//
//   features [B, T, in_dim] -> input_proj -> encoder (padding masked) -> mean over the real
//   tokens -> output_proj -> L2-normalise -> [B, out_dim]
#pragma once
#include "nn/linear.h"
#include "nn/model.h"
#include "nn/transformer_encoder.h"

namespace nce::nn {

class SigPredictor : public EmbeddingModel {
public:
    // config.kind must be "sig_predictor", with in_dim > 0 and out_dim > 0.
    SigPredictor(const ModelConfig& config, Generator& generator, Dtype dtype = Dtype::Float32);

    // input: float features [B, T, in_dim] (converted to the parameters' dtype); mask [B, T]
    // (nonzero = token; padding anywhere, every row needs a token) -> [B, out_dim], unit rows.
    Var encode(const Tensor& input, const Tensor& mask, Generator* generator) override;
    Var* log_tau() override { return config_.learnable_temperature ? &log_tau_ : nullptr; }

    Linear input_proj;         // [d_model, in_dim]
    TransformerEncoder encoder;
    Linear output_proj;        // [out_dim, d_model]

private:
    Var log_tau_;  // [1], registered only with config.learnable_temperature
};

}  // namespace nce::nn
