#include "nn/sig_predictor.h"

#include "nn/model_parts.h"

namespace nce::nn {

SigPredictor::SigPredictor(const ModelConfig& config, Generator& generator, Dtype dtype)
    : EmbeddingModel(validate_config(config)),
      input_proj(config.in_dim, config.d_model, generator, dtype),
      encoder(encoder_layer_options(config), config.num_layers, generator, dtype),
      output_proj(config.d_model, config.out_dim, generator, dtype) {
    NCE_CHECK(config.kind == "sig_predictor", "SigPredictor: config.kind is '{}', expected 'sig_predictor'",
              config.kind);
    if (config.learnable_temperature) {
        log_tau_ = initial_log_tau(dtype);
        register_parameter("log_tau", log_tau_);
    }
    register_module("input_proj", input_proj);
    register_module("encoder", encoder);
    register_module("output_proj", output_proj);
}

Var SigPredictor::encode(const Tensor& input, const Tensor& mask, Generator* generator) {
    const int64_t in_dim = config_.in_dim;
    NCE_CHECK(input.defined() && is_floating(input.dtype()) && input.rank() == 3 && input.size(2) == in_dim,
              "sig_predictor: features must be float [B, T, in_dim = {}], got {} {}", in_dim,
              input.defined() ? dtype_name(input.dtype()) : "undefined",
              input.defined() ? shape_string(input.shape()) : "");
    check_token_mask(mask, input.size(0), input.size(1), "sig_predictor");
    check_generator(*this, generator);

    Var features(input.to(input_proj.weight.dtype()));                  // [B, T, in_dim], data: no gradient
    Var tokens = encoder.forward(input_proj.forward(features), mask, generator);  // [B, T, d_model]
    Var pooled = masked_mean_pool(tokens, mask);                         // [B, d_model]
    return l2_normalize(output_proj.forward(pooled));                    // [B, out_dim]
}

}  // namespace nce::nn
