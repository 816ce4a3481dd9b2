#include "nn/text_encoder.h"

#include <numeric>
#include <vector>

#include "nn/model_parts.h"

namespace nce::nn {

TextEncoder::TextEncoder(const ModelConfig& config, Generator& generator, Dtype dtype)
    : EmbeddingModel(validate_config(config)),
      token_embedding(config.vocab_size, config.d_model, generator, dtype),
      position_embedding(config.max_len, config.d_model, generator, dtype),
      encoder(encoder_layer_options(config), config.num_layers, generator, dtype) {
    NCE_CHECK(config.kind == "text_encoder", "TextEncoder: config.kind is '{}', expected 'text_encoder'", config.kind);
    if (config.out_dim > 0) output_proj.emplace(config.d_model, config.out_dim, generator, dtype);
    if (config.learnable_temperature) {
        log_tau_ = initial_log_tau(dtype);
        register_parameter("log_tau", log_tau_);
    }
    register_module("token_embedding", token_embedding);
    register_module("position_embedding", position_embedding);
    register_module("encoder", encoder);
    if (output_proj) register_module("output_proj", *output_proj);
    if (config.lexical_dim > 0) {  // drawn after every other parameter: the rest start as without it
        lexical_norm.emplace(config.d_model, config.layer_norm_eps, dtype);
        lexical_proj.emplace(config.d_model, config.lexical_dim, generator, dtype);
        register_module("lexical_norm", *lexical_norm);
        register_module("lexical_proj", *lexical_proj);
    }
}

Var TextEncoder::encode(const Tensor& input, const Tensor& mask, Generator* generator) {
    NCE_CHECK(input.defined() && input.dtype() == Dtype::Int64 && input.rank() == 2,
              "text_encoder: ids must be int64 [B, T], got {} {}", input.defined() ? dtype_name(input.dtype()) : "undefined",
              input.defined() ? shape_string(input.shape()) : "");
    const int64_t batch = input.size(0), tokens = input.size(1);
    NCE_CHECK(tokens <= config_.max_len,
              "text_encoder: ids {} have T = {} tokens but max_len is {}; truncate the ids to {} tokens or build "
              "the model with a larger max_len",
              shape_string(input.shape()), tokens, config_.max_len, config_.max_len);
    check_token_mask(mask, batch, tokens, "text_encoder");
    check_generator(*this, generator);

    std::vector<int64_t> positions(static_cast<size_t>(tokens));
    std::iota(positions.begin(), positions.end(), int64_t{0});  // 0, 1, ..., T-1
    Var token_vectors = token_embedding.forward(input);                                       // [B, T, D]
    Var position_vectors = position_embedding.forward(Tensor::from_indices(positions, {tokens}).to(input.device()));  // [T, D]
    Var embedded = token_vectors + position_vectors;                 // [B, T, D] (positions broadcast over B)

    Var states = encoder.forward(embedded, mask, generator);  // [B, T, D]
    Var pooled = masked_mean_pool(states, mask);              // [B, D]
    if (output_proj) pooled = output_proj->forward(pooled);   // [B, out_dim]
    if (!lexical_proj) return l2_normalize(pooled);
    // The lexical head (text_encoder.h). f(z) = log(1 + relu(z)) rises monotonically, so
    //   max over real t of f(z_bte) = f(max over real t of z_bte)
    // and f runs on [B, E] instead of [B, T, E]. A padded z is set to 0 rather than left out:
    // when every real z is below 0 the max becomes 0 instead, and f gives 0 for both. The
    // gradient goes to the same token either way (f' > 0 where z > 0; f' = 0 where z <= 0).
    Var z = lexical_proj->forward(lexical_norm->forward(states));                 // [B, T, E]
    std::vector<double> is_token = mask.to(Device::CPU).to(Dtype::Float64).to_vector();
    for (double& value : is_token) value = value != 0 ? 1.0 : 0.0;
    Var real_tokens(Tensor::from_vector(is_token, {batch, tokens, 1}, z.value().dtype())
                        .to(z.value().device()));                                 // [B, T, 1]: 1 or 0
    Var lexical = log(relu(max(z * real_tokens, 1)) + 1.0);                        // [B, E]
    return l2_normalize(concat({l2_normalize(pooled), l2_normalize(lexical)}, 1));  // [B, D' + E]
}

}  // namespace nce::nn
