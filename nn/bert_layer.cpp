#include "nn/bert_layer.h"

namespace nce::nn {
namespace {

constexpr double kInitializerRange = 0.02;  // BertConfig.initializer_range's default

// Dropout that needs a generator only when it drops something.
Var residual_dropout(const Var& x, double p, Generator* generator, bool training) {
    if (!training || p == 0) return x;
    NCE_CHECK(generator != nullptr, "BertLayer: training mode with dropout {} needs a generator; pass one, or call "
              "train(false)", p);
    return dropout(x, p, *generator, true);
}

}  // namespace

void bert_initialise(Linear& linear, Generator& generator) {
    linear.weight.set_value(generator.normal(linear.weight.shape(), linear.weight.dtype(), 0.0, kInitializerRange));
    linear.bias.set_value(Tensor::zeros(linear.bias.shape(), linear.bias.dtype()));
}

BertSelfAttention::BertSelfAttention(int64_t hidden_size, Generator& generator, Dtype dtype)
    : query(hidden_size, hidden_size, generator, dtype),
      key(hidden_size, hidden_size, generator, dtype),
      value(hidden_size, hidden_size, generator, dtype) {
    for (Linear* linear : {&query, &key, &value}) bert_initialise(*linear, generator);
    register_module("query", query);
    register_module("key", key);
    register_module("value", value);
}

BertResidualOutput::BertResidualOutput(int64_t in_features, int64_t hidden_size, double eps, Generator& generator,
                                       Dtype dtype)
    : dense(in_features, hidden_size, generator, dtype), layer_norm(hidden_size, eps, dtype) {
    bert_initialise(dense, generator);
    register_module("dense", dense);
    register_module("LayerNorm", layer_norm);
}

BertAttention::BertAttention(const BertLayerOptions& options, Generator& generator, Dtype dtype)
    : self(options.hidden_size, generator, dtype),
      output(options.hidden_size, options.hidden_size, options.layer_norm_eps, generator, dtype) {
    register_module("self", self);
    register_module("output", output);
}

BertIntermediate::BertIntermediate(int64_t hidden_size, int64_t intermediate_size, Generator& generator, Dtype dtype)
    : dense(hidden_size, intermediate_size, generator, dtype) {
    bert_initialise(dense, generator);
    register_module("dense", dense);
}

BertLayer::BertLayer(const BertLayerOptions& options, Generator& generator, Dtype dtype)
    : attention(options, generator, dtype),
      intermediate(options.hidden_size, options.intermediate_size, generator, dtype),
      output(options.intermediate_size, options.hidden_size, options.layer_norm_eps, generator, dtype),
      options_(options) {
    NCE_CHECK(options.num_heads > 0 && options.hidden_size % options.num_heads == 0,
              "BertLayer: num_attention_heads {} must be positive and divide hidden_size {}", options.num_heads,
              options.hidden_size);
    register_module("attention", attention);
    register_module("intermediate", intermediate);
    register_module("output", output);
}

Var BertLayer::forward(const Var& x, const Tensor& key_padding_mask, const Tensor& rows, Generator* generator) const {
    const int64_t batch = key_padding_mask.size(0), tokens = key_padding_mask.size(1), width = options_.hidden_size;
    const int64_t count = rows.defined() ? rows.size(0) : batch * tokens;
    NCE_CHECK(x.value().rank() == 2 && x.size(0) == count && x.size(1) == width,
              "BertLayer: x must be [N = {}, hidden_size = {}], got {}", count, width, shape_string(x.shape()));
    const bool drop = training();
    const BertSelfAttention& self = attention.self;
    // [W_q; W_k; W_v] [3D, D] and [b_q; b_k; b_v] [3D]: one GEMM gives qkv = [q | k | v] [N, 3D].
    Var stacked_weight = concat({self.query.weight, self.key.weight, self.value.weight}, 0);
    Var stacked_bias = concat({self.query.bias, self.key.bias, self.value.bias}, 0);
    Var qkv = linear(x, stacked_weight, stacked_bias);
    // Attention reads the batch's [B, T] grid: the rows put in their places, padding 0
    // (masked as keys; as queries their outputs are dropped below).
    if (rows.defined()) qkv = index_add(qkv, rows, batch * tokens);                           // [B·T, 3D]
    const double attention_p = drop ? options_.attention_dropout : 0.0;
    NCE_CHECK(attention_p == 0 || generator != nullptr,
              "BertLayer: training mode with attention dropout {} needs a generator; pass one, or call train(false)",
              attention_p);
    Var context = reshape(packed_attention(reshape(qkv, {batch, tokens, 3 * width}), key_padding_mask,
                                           options_.num_heads, attention_p, generator),
                          {batch * tokens, width});                                          // [B·T, D]
    if (rows.defined()) context = index_select(context, rows);                                // [N, D]

    const BertResidualOutput& attention_output = attention.output;
    Var attended = attention_output.layer_norm.forward(
        x + residual_dropout(attention_output.dense.forward(context), options_.hidden_dropout, generator, drop));

    Var hidden = intermediate.dense.forward(attended);                                         // [N, F]
    hidden = options_.gelu ? gelu(hidden, GeluApproximation::Erf) : relu(hidden);
    return output.layer_norm.forward(                                                          // [N, D]
        attended + residual_dropout(output.dense.forward(hidden), options_.hidden_dropout, generator, drop));
}

}  // namespace nce::nn
