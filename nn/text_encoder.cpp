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
        lexical_log_weight_ = Var::parameter(Tensor::zeros({1}, dtype));  // weight 1: the parts start equal
        register_parameter("lexical_log_weight", lexical_log_weight_);
    }
    if (config.term_weights) {  // also drawn last
        term_norm.emplace(config.d_model, config.layer_norm_eps, dtype);
        term_weight.emplace(config.d_model, 1, generator, dtype);
        term_weight->bias.set_value(Tensor::full({1}, 1.0, dtype));  // every token starts at about log 2
        term_bias.emplace(config.vocab_size, 1, generator, dtype);
        term_bias->weight.set_value(Tensor::zeros({config.vocab_size, 1}, dtype));  // no piece favoured at first
        register_module("term_norm", *term_norm);
        register_module("term_weight", *term_weight);
        register_module("term_bias", *term_bias);
        term_log_weight_ = Var::parameter(Tensor::zeros({1}, dtype));
        register_parameter("term_log_weight", term_log_weight_);
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

    Var token_vectors = token_embedding.forward(input);                                       // [B, T, D]
    // Positions 0, 1, ..., T-1: the table's first T rows, a slice where the table is (no ids
    // to make on the host and copy to a device).
    Var position_vectors = slice(position_embedding.weight, 0, 0, tokens);                    // [T, D]
    Var embedded = token_vectors + position_vectors;                 // [B, T, D] (positions broadcast over B)

    Var states = encoder.forward(embedded, mask, generator);  // [B, T, D]
    Var pooled = masked_mean_pool(states, mask);              // [B, D]
    if (output_proj) pooled = output_proj->forward(pooled);   // [B, out_dim]
    if (!lexical_proj && !term_weight) return l2_normalize(pooled);
    std::vector<double> is_token = mask.to(Device::CPU).to(Dtype::Float64).to_vector();
    for (double& value : is_token) value = value != 0 ? 1.0 : 0.0;
    Tensor real_tokens = Tensor::from_vector(is_token, {batch, tokens, 1}, states.value().dtype())
                             .to(states.value().device());  // [B, T, 1]: 1 or 0
    // The halves (or thirds) side by side: [mean ; a·max-pooled ; c·terms], each part a unit vector
    // times its learned weight (text_encoder.h).
    std::vector<Var> parts{l2_normalize(pooled)};  // [B, D']
    if (lexical_proj) {
        // The max-pooled head (text_encoder.h). f(z) = log(1 + relu(z)) rises monotonically, so
        //   max over real t of f(z_bte) = f(max over real t of z_bte)
        // and f runs on [B, E] instead of [B, T, E]. A padded z is set to 0 rather than left
        // out: when every real z is below 0 the max becomes 0 instead, and f gives 0 for both.
        // The gradient goes to the same token either way (f' > 0 where z > 0; f' = 0 where z <= 0).
        Var z = lexical_proj->forward(lexical_norm->forward(states));   // [B, T, E]
        Var lexical = log(relu(max(z * Var(real_tokens), 1)) + 1.0);     // [B, E]
        parts.push_back(l2_normalize(lexical) * exp(lexical_log_weight_));
    }
    if (term_weight) {
        Var terms = term_vector(states, input, real_tokens);  // [B, V]
        parts.push_back(l2_normalize(terms) * exp(term_log_weight_));
    }
    return l2_normalize(concat(parts, 1));  // [B, D' + E + V]
}

Var TextEncoder::term_vector(const Var& states, const Tensor& input, const Tensor& real_tokens) {
    const int64_t batch = input.size(0), tokens = input.size(1), vocabulary = config_.vocab_size;
    // Token (b, t) adds into row b * V + id_bt of the flattened [B * V] vector; a padding
    // token's weight is multiplied by 0 first, so where it lands does not matter.
    std::vector<int64_t> ids = input.to(Device::CPU).to_indices();
    std::vector<int64_t> rows(ids.size());
    for (size_t i = 0; i < ids.size(); ++i) rows[i] = static_cast<int64_t>(i) / tokens * vocabulary + ids[i];
    Var z = term_weight->forward(term_norm->forward(states)) + term_bias->forward(input);  // [B, T, 1]
    Var weights = log(relu(z) + 1.0) * Var(real_tokens);                           // [B, T, 1], 0 for padding
    Var counts = index_add(reshape(weights, {batch * tokens, 1}),
                           Tensor::from_indices(rows, {batch * tokens}).to(input.device()), batch * vocabulary);
    return log(reshape(counts, {batch, vocabulary}) + 1.0);                        // [B, V]
}

}  // namespace nce::nn
