// The nn modules and the two models (nn/): forward values of Linear, LayerNorm,
// MultiHeadAttention and TransformerEncoderLayer against plain loops written here;
// initialisation; padding; unit-norm outputs; parameter names against PyTorch's; dropout
// replay; every registered gradient check; and the one-line errors for bad input.
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "nn/dropout.h"
#include "nn/embedding.h"
#include "nn/layer_norm.h"
#include "nn/linear.h"
#include "nn/model.h"
#include "nn/module_checks.h"
#include "nn/multi_head_attention.h"
#include "nn/sig_predictor.h"
#include "nn/text_encoder.h"
#include "nn/transformer_encoder.h"
#include "nn/transformer_encoder_layer.h"
#include "tests/test_helpers.h"

using namespace nce;
using namespace nce::nn;
using nce::testing::kFloatDtypes;
using nce::testing::tolerance_for;

namespace {

using Values = std::vector<double>;

// Every element of `actual` against `expected` within `tolerance` relative to max(1, |expected|).
void check_values(const Tensor& actual, const Values& expected, double tolerance, const std::string& what) {
    Values values = actual.to_vector();
    REQUIRE_MESSAGE(values.size() == expected.size(),
                    what << ": " << values.size() << " values, expected " << expected.size());
    for (size_t i = 0; i < values.size(); ++i) {
        double error = std::abs(values[i] - expected[i]) / std::max(1.0, std::abs(expected[i]));
        CHECK_MESSAGE(error <= tolerance, what << ": element " << i << " is " << values[i] << ", expected "
                                                << expected[i]);
        if (!(error <= tolerance)) return;  // one message per tensor is enough
    }
}

Values values_of(const Var& parameter) { return parameter.value().to(Dtype::Float64).to_vector(); }

Values added(const Values& a, const Values& b) {
    Values out(a.size());
    for (size_t i = 0; i < a.size(); ++i) out[i] = a[i] + b[i];
    return out;
}

// Gives every parameter a random value: the initial ones and zeros would hide a bias or a
// norm weight used in the wrong place.
void randomise_parameters(Module& module, Generator& generator) {
    for (Var* parameter : module.parameters())
        parameter->set_value(generator.normal(parameter->shape(), parameter->dtype(), 0.0, 0.5));
}

// y[r, o] = sum_i x[r, i] · weight[o, i] + bias[o]        x: rows × in, weight: out × in
Values naive_linear(const Values& x, const Values& weight, const Values& bias, int64_t in, int64_t out) {
    const int64_t rows = static_cast<int64_t>(x.size()) / in;
    Values y(static_cast<size_t>(rows * out));
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t o = 0; o < out; ++o) {
            double total = bias[o];
            for (int64_t i = 0; i < in; ++i) total += x[r * in + i] * weight[o * in + i];
            y[r * out + o] = total;
        }
    return y;
}

// Each row of `dim` values: (x - mean) / sqrt(biased variance + eps) · weight + bias.
Values naive_layer_norm(const Values& x, const Values& weight, const Values& bias, int64_t dim, double eps) {
    Values y(x.size());
    for (size_t start = 0; start < x.size(); start += dim) {
        double mean = 0, variance = 0;
        for (int64_t d = 0; d < dim; ++d) mean += x[start + d] / dim;
        for (int64_t d = 0; d < dim; ++d) variance += (x[start + d] - mean) * (x[start + d] - mean) / dim;
        for (int64_t d = 0; d < dim; ++d)
            y[start + d] = (x[start + d] - mean) / std::sqrt(variance + eps) * weight[d] + bias[d];
    }
    return y;
}

// PyTorch's MultiheadAttention(x, x, x, key_padding_mask) with plain loops.
//   x [B, T, D]; key_mask [B, T] (0 = padding, skipped as a key; empty = none)
//   keep_scale [B, H, T, T]: dropout's mask / (1 - p) on the probabilities (empty = none)
Values naive_self_attention(const MultiHeadAttention& attention, const Values& x, const Values& key_mask,
                            int64_t batch, int64_t tokens, const Values& keep_scale = {}) {
    const int64_t dim = attention.embed_dim(), heads = attention.num_heads(), head_dim = dim / heads;
    // qkv[b, t, :] = [q | k | v], each D wide.
    Values qkv = naive_linear(x, values_of(attention.in_proj_weight), values_of(attention.in_proj_bias), dim, 3 * dim);
    auto q = [&](int64_t b, int64_t t, int64_t c) { return qkv[(b * tokens + t) * 3 * dim + c]; };
    auto k = [&](int64_t b, int64_t t, int64_t c) { return qkv[(b * tokens + t) * 3 * dim + dim + c]; };
    auto v = [&](int64_t b, int64_t t, int64_t c) { return qkv[(b * tokens + t) * 3 * dim + 2 * dim + c]; };

    Values merged(static_cast<size_t>(batch * tokens * dim), 0.0);  // heads side by side: [B, T, D]
    for (int64_t b = 0; b < batch; ++b)
        for (int64_t h = 0; h < heads; ++h)
            for (int64_t i = 0; i < tokens; ++i) {
                Values p(static_cast<size_t>(tokens), 0.0);
                double largest = -std::numeric_limits<double>::infinity(), total = 0;
                for (int64_t j = 0; j < tokens; ++j) {
                    if (!key_mask.empty() && key_mask[b * tokens + j] == 0) continue;
                    double dot = 0;
                    for (int64_t c = h * head_dim; c < (h + 1) * head_dim; ++c) dot += q(b, i, c) * k(b, j, c);
                    p[j] = dot / std::sqrt(static_cast<double>(head_dim));
                    largest = std::max(largest, p[j]);
                }
                for (int64_t j = 0; j < tokens; ++j) {
                    bool is_key = key_mask.empty() || key_mask[b * tokens + j] != 0;
                    p[j] = is_key ? std::exp(p[j] - largest) : 0.0;
                    total += p[j];
                }
                for (int64_t j = 0; j < tokens; ++j) {
                    p[j] /= total;
                    if (!keep_scale.empty()) p[j] *= keep_scale[((b * heads + h) * tokens + i) * tokens + j];
                }
                for (int64_t c = h * head_dim; c < (h + 1) * head_dim; ++c) {
                    double out = 0;
                    for (int64_t j = 0; j < tokens; ++j) out += p[j] * v(b, j, c);
                    merged[(b * tokens + i) * dim + c] = out;
                }
            }
    return naive_linear(merged, values_of(attention.out_proj.weight), values_of(attention.out_proj.bias), dim, dim);
}

// PyTorch's TransformerEncoderLayer in eval mode, from the layer's own parameter values.
Values naive_encoder_layer(const TransformerEncoderLayer& layer, const Values& x, const Values& key_mask,
                           int64_t batch, int64_t tokens) {
    const TransformerEncoderLayerOptions& o = layer.options();
    auto norm = [&](const LayerNorm& n, const Values& y) {
        return naive_layer_norm(y, values_of(n.weight), values_of(n.bias), o.d_model, o.layer_norm_eps);
    };
    auto attention = [&](const Values& y) { return naive_self_attention(layer.self_attn, y, key_mask, batch, tokens); };
    auto feed_forward = [&](const Values& y) {
        Values hidden = naive_linear(y, values_of(layer.linear1.weight), values_of(layer.linear1.bias), o.d_model,
                                     o.dim_feedforward);
        for (double& h : hidden)
            h = o.activation == Activation::Relu ? std::max(h, 0.0) : 0.5 * h * (1 + std::erf(h / std::sqrt(2.0)));
        return naive_linear(hidden, values_of(layer.linear2.weight), values_of(layer.linear2.bias), o.dim_feedforward,
                            o.d_model);
    };
    if (o.norm_first) {
        Values h = added(x, attention(norm(layer.norm1, x)));
        return added(h, feed_forward(norm(layer.norm2, h)));
    }
    Values h = norm(layer.norm1, added(x, attention(x)));
    return norm(layer.norm2, added(h, feed_forward(h)));
}

ModelConfig sig_predictor_config() {
    ModelConfig config;
    config.kind = "sig_predictor";
    config.in_dim = 3;
    config.d_model = 8;
    config.nhead = 2;
    config.dim_feedforward = 16;
    config.num_layers = 2;
    config.dropout = 0.1;
    config.activation = "gelu";
    config.out_dim = 4;
    return config;
}

ModelConfig text_encoder_config() {
    ModelConfig config;
    config.kind = "text_encoder";
    config.vocab_size = 20;
    config.max_len = 6;
    config.d_model = 8;
    config.nhead = 2;
    config.dim_feedforward = 16;
    config.num_layers = 1;
    config.dropout = 0.1;
    config.norm_first = true;
    return config;
}

// Moves the lexical head off its initial values (a random LayerNorm scale and shift, a
// bias that leaves some units below zero), so the test sees every part of it at work.
void randomise_lexical_head(TextEncoder& model, Generator& generator) {
    for (Var* parameter : {&model.lexical_norm->weight, &model.lexical_norm->bias, &model.lexical_proj->bias})
        parameter->set_value(generator.normal(parameter->shape(), Dtype::Float64));
}

std::vector<std::string> parameter_names(Module& module) {
    std::vector<std::string> names;
    for (auto& [name, parameter] : module.named_parameters()) names.push_back(name);
    return names;
}

}  // namespace

TEST_CASE("Linear: y = x W^T + b on the last axis, against loops, for 2-D and 3-D inputs, both dtypes") {
    for (Dtype dtype : kFloatDtypes) {
        Generator generator(3);
        Linear linear(4, 5, generator, dtype);
        for (const Shape& x_shape : {Shape{3, 4}, Shape{2, 3, 4}}) {
            Tensor x = generator.normal(x_shape, dtype);
            Var y = linear.forward(Var(x));
            Shape expected_shape = x_shape;
            expected_shape.back() = 5;
            CHECK(y.shape() == expected_shape);
            CHECK(y.dtype() == dtype);
            check_values(y.value(),
                         naive_linear(x.to_vector(), values_of(linear.weight), values_of(linear.bias), 4, 5),
                         tolerance_for(dtype), "linear " + shape_string(x_shape));
        }
    }
}

TEST_CASE("Linear: PyTorch's initialisation, weight and bias uniform in +-1/sqrt(in)") {
    Generator generator(4);
    Linear linear(16, 64, generator, Dtype::Float64);
    CHECK(parameter_names(linear) == std::vector<std::string>{"weight", "bias"});
    CHECK(linear.weight.shape() == Shape{64, 16});
    CHECK(linear.bias.shape() == Shape{64});
    const double bound = 1.0 / std::sqrt(16.0);  // 0.25
    for (const Var* parameter : {&linear.weight, &linear.bias}) {
        Values values = values_of(*parameter);
        double largest = 0;
        for (double v : values) largest = std::max(largest, std::abs(v));
        CHECK(largest <= bound);
        CHECK(largest > 0.8 * bound);  // spread over the interval, not squeezed near 0
    }
}

TEST_CASE("Embedding: rows of the table by id, normal(0, 1) init, and an out-of-range id named") {
    Generator generator(5);
    Embedding embedding(100, 50, generator, Dtype::Float64);
    Values table = values_of(embedding.weight);
    double mean = 0, square = 0;
    for (double v : table) mean += v / 5000, square += v * v / 5000;
    CHECK(std::abs(mean) < 0.05);
    CHECK(std::abs(std::sqrt(square - mean * mean) - 1.0) < 0.05);

    Tensor ids = Tensor::from_indices({7, 0, 99, 7}, {2, 2});
    Var y = embedding.forward(ids);
    REQUIRE(y.shape() == Shape{2, 2, 50});
    Values out = y.value().to_vector();
    const int64_t picked[] = {7, 0, 99, 7};
    for (int64_t n = 0; n < 4; ++n)
        for (int64_t d = 0; d < 50; ++d) CHECK(out[n * 50 + d] == table[picked[n] * 50 + d]);

    CHECK_ERROR_MENTIONS(embedding.forward(Tensor::from_indices({3, 100}, {2})), "id 100");
    CHECK_ERROR_MENTIONS(embedding.forward(Tensor::from_indices({3, 100}, {2})), "[0, 100)");
    CHECK_ERROR_MENTIONS(embedding.forward(Tensor::from_indices({-1}, {1})), "id -1");
    CHECK_ERROR_MENTIONS(embedding.forward(Tensor::zeros({2}, Dtype::Float32)), "int64");
}

TEST_CASE("LayerNorm module: ones and zeros at first, then the normalisation against loops") {
    for (Dtype dtype : kFloatDtypes) {
        LayerNorm norm(6, 1e-5, dtype);
        CHECK(parameter_names(norm) == std::vector<std::string>{"weight", "bias"});
        CHECK(values_of(norm.weight) == Values(6, 1.0));
        CHECK(values_of(norm.bias) == Values(6, 0.0));
        Generator generator(6);
        randomise_parameters(norm, generator);
        Tensor x = generator.normal({2, 3, 6}, dtype, 1.0, 3.0);
        check_values(norm.forward(Var(x)).value(),
                     naive_layer_norm(x.to_vector(), values_of(norm.weight), values_of(norm.bias), 6, 1e-5),
                     dtype == Dtype::Float64 ? 1e-12 : 1e-5, "layer norm");
    }
    CHECK_ERROR_MENTIONS(LayerNorm(6).forward(Var(Tensor::zeros({2, 5}, Dtype::Float32))), "[2, 5]");
}

TEST_CASE("Dropout module: the identity in eval mode; in training it zeroes and rescales, and needs a generator") {
    Dropout dropout(0.5);
    Tensor x = Tensor::full({4, 8}, 2.0, Dtype::Float64);
    dropout.train(false);
    CHECK(dropout.forward(Var(x), nullptr).value().to_vector() == x.to_vector());
    dropout.train(true);
    Generator generator(8);
    int zeros = 0;
    for (double v : dropout.forward(Var(x), &generator).value().to_vector()) {
        CHECK((v == 0.0 || v == 4.0));  // kept values scaled by 1 / (1 - p)
        zeros += v == 0.0;
    }
    CHECK(zeros > 4);
    CHECK(zeros < 28);
    CHECK_ERROR_MENTIONS(dropout.forward(Var(x), nullptr), "needs a generator");
    CHECK_ERROR_MENTIONS(Dropout(1.0), "[0, 1)");
}

TEST_CASE("MultiHeadAttention: PyTorch's self-attention against loops, with left padding and gaps, both dtypes") {
    const int64_t batch = 3, tokens = 5, dim = 6;
    // Row 0 left padding, row 1 gaps, row 2 no padding.
    const Values key_mask{0, 0, 1, 1, 1, 1, 0, 1, 0, 1, 1, 1, 1, 1, 1};
    for (Dtype dtype : kFloatDtypes)
        for (int64_t heads : {1, 2, 3}) {
            Generator generator(9);
            MultiHeadAttention attention(dim, heads, 0.1, generator, dtype);
            randomise_parameters(attention, generator);
            attention.train(false);
            Tensor x = generator.normal({batch, tokens, dim}, dtype);
            Tensor mask = Tensor::from_vector(key_mask, {batch, tokens}, dtype);
            Var y = attention.forward(Var(x), mask, nullptr);
            CHECK(y.shape() == Shape{batch, tokens, dim});
            check_values(y.value(), naive_self_attention(attention, x.to_vector(), key_mask, batch, tokens),
                         dtype == Dtype::Float64 ? 1e-12 : 1e-5, "attention, heads " + std::to_string(heads));
            // No mask: every key attends.
            check_values(attention.forward(Var(x), Tensor(), nullptr).value(),
                         naive_self_attention(attention, x.to_vector(), {}, batch, tokens),
                         dtype == Dtype::Float64 ? 1e-12 : 1e-5, "attention without mask");
        }
}

TEST_CASE("MultiHeadAttention: PyTorch's initialisation (xavier in_proj, zero biases) and names") {
    Generator generator(10);
    MultiHeadAttention attention(8, 2, 0.0, generator, Dtype::Float64);
    CHECK(parameter_names(attention) ==
          std::vector<std::string>{"in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"});
    CHECK(attention.in_proj_weight.shape() == Shape{24, 8});
    const double xavier_bound = std::sqrt(6.0 / (8 + 24));
    double largest = 0;
    for (double v : values_of(attention.in_proj_weight)) largest = std::max(largest, std::abs(v));
    CHECK(largest <= xavier_bound);
    CHECK(largest > 0.8 * xavier_bound);
    CHECK(values_of(attention.in_proj_bias) == Values(24, 0.0));
    CHECK(values_of(attention.out_proj.bias) == Values(8, 0.0));
    CHECK_ERROR_MENTIONS(MultiHeadAttention(8, 3, 0.0, generator), "must divide embed_dim 8");
}

TEST_CASE("MultiHeadAttention: in training, dropout acts on the attention probabilities with the generator's masks") {
    const int64_t batch = 2, tokens = 4, dim = 4, heads = 2;
    const Values key_mask{0, 1, 1, 1, 1, 1, 0, 1};
    const double p = 0.25;
    Generator generator(11);
    MultiHeadAttention attention(dim, heads, p, generator, Dtype::Float64);
    randomise_parameters(attention, generator);
    Tensor x = generator.normal({batch, tokens, dim}, Dtype::Float64);
    Tensor mask = Tensor::from_vector(key_mask, {batch, tokens}, Dtype::Float64);

    Generator masks(12);
    Var y = attention.forward(Var(x), mask, &masks);  // training mode is the default
    // The only draw is one keep-mask over the probabilities [B, H, T, T]: replay it.
    Generator replay(12);
    Values keep_scale = (replay.bernoulli({batch, heads, tokens, tokens}, Dtype::Float64, 1 - p) / (1 - p)).to_vector();
    check_values(y.value(), naive_self_attention(attention, x.to_vector(), key_mask, batch, tokens, keep_scale), 1e-12,
                 "attention with dropout");
    CHECK(max_abs_difference(y.value(), attention.forward(Var(x), mask, &replay).value()) > 1e-3);  // new masks
    CHECK_ERROR_MENTIONS(attention.forward(Var(x), mask, nullptr), "needs a generator");
}

TEST_CASE("TransformerEncoderLayer: post-norm and pre-norm against loops, relu and gelu; the two differ") {
    const int64_t batch = 2, tokens = 4;
    const Values key_mask{0, 1, 1, 1, 1, 0, 1, 1};
    for (Dtype dtype : kFloatDtypes)
        for (Activation activation : {Activation::Relu, Activation::Gelu}) {
            Values outputs[2];
            for (bool norm_first : {false, true}) {
                TransformerEncoderLayerOptions options;
                options.d_model = 6;
                options.nhead = 2;
                options.dim_feedforward = 10;
                options.activation = activation;
                options.norm_first = norm_first;
                Generator generator(13);  // the same parameters for post-norm and pre-norm
                TransformerEncoderLayer layer(options, generator, dtype);
                randomise_parameters(layer, generator);
                layer.train(false);
                Tensor x = generator.normal({batch, tokens, 6}, dtype);
                Var y = layer.forward(Var(x), Tensor::from_vector(key_mask, {batch, tokens}, dtype), nullptr);
                CHECK(y.shape() == Shape{batch, tokens, 6});
                check_values(y.value(), naive_encoder_layer(layer, x.to_vector(), key_mask, batch, tokens),
                             dtype == Dtype::Float64 ? 1e-11 : 1e-4,
                             std::string(norm_first ? "pre-norm " : "post-norm ") + activation_name(activation));
                outputs[norm_first] = y.value().to(Dtype::Float64).to_vector();
            }
            double largest_difference = 0;
            for (size_t i = 0; i < outputs[0].size(); ++i)
                largest_difference = std::max(largest_difference, std::abs(outputs[0][i] - outputs[1][i]));
            CHECK(largest_difference > 0.1);
        }
}

TEST_CASE("TransformerEncoder: layers.0 .. layers.{n-1} applied in order") {
    TransformerEncoderLayerOptions options;
    options.d_model = 4;
    options.nhead = 2;
    options.dim_feedforward = 8;
    Generator generator(14);
    TransformerEncoder encoder(options, 3, generator, Dtype::Float64);
    randomise_parameters(encoder, generator);
    encoder.train(false);
    std::vector<std::string> names = parameter_names(encoder);
    REQUIRE(names.size() == 36);
    CHECK(names[0] == "layers.0.self_attn.in_proj_weight");
    CHECK(names[12] == "layers.1.self_attn.in_proj_weight");
    CHECK(names[35] == "layers.2.norm2.bias");

    const Values key_mask{1, 1, 0, 0, 1, 1};
    Tensor x = generator.normal({2, 3, 4}, Dtype::Float64);
    Values expected = x.to_vector();
    for (const auto& layer : encoder.layers) expected = naive_encoder_layer(*layer, expected, key_mask, 2, 3);
    check_values(encoder.forward(Var(x), Tensor::from_vector(key_mask, {2, 3}, Dtype::Float64), nullptr).value(),
                 expected, 1e-11, "encoder");
}

TEST_CASE("parameter names are PyTorch's state_dict keys, for both models") {
    Generator generator(15);
    ModelConfig sig = sig_predictor_config();
    sig.learnable_temperature = true;
    auto sig_predictor = make_model(sig, generator);
    // PyTorch lists a module's own parameters before its children's: log_tau comes first.
    CHECK(parameter_names(*sig_predictor) == std::vector<std::string>{
        "log_tau",
        "input_proj.weight", "input_proj.bias",
        "encoder.layers.0.self_attn.in_proj_weight", "encoder.layers.0.self_attn.in_proj_bias",
        "encoder.layers.0.self_attn.out_proj.weight", "encoder.layers.0.self_attn.out_proj.bias",
        "encoder.layers.0.linear1.weight", "encoder.layers.0.linear1.bias",
        "encoder.layers.0.linear2.weight", "encoder.layers.0.linear2.bias",
        "encoder.layers.0.norm1.weight", "encoder.layers.0.norm1.bias",
        "encoder.layers.0.norm2.weight", "encoder.layers.0.norm2.bias",
        "encoder.layers.1.self_attn.in_proj_weight", "encoder.layers.1.self_attn.in_proj_bias",
        "encoder.layers.1.self_attn.out_proj.weight", "encoder.layers.1.self_attn.out_proj.bias",
        "encoder.layers.1.linear1.weight", "encoder.layers.1.linear1.bias",
        "encoder.layers.1.linear2.weight", "encoder.layers.1.linear2.bias",
        "encoder.layers.1.norm1.weight", "encoder.layers.1.norm1.bias",
        "encoder.layers.1.norm2.weight", "encoder.layers.1.norm2.bias",
        "output_proj.weight", "output_proj.bias"});

    ModelConfig text = text_encoder_config();  // out_dim 0: no output_proj; no learnable temperature
    auto text_encoder = make_model(text, generator);
    CHECK(parameter_names(*text_encoder) == std::vector<std::string>{
        "token_embedding.weight", "position_embedding.weight",
        "encoder.layers.0.self_attn.in_proj_weight", "encoder.layers.0.self_attn.in_proj_bias",
        "encoder.layers.0.self_attn.out_proj.weight", "encoder.layers.0.self_attn.out_proj.bias",
        "encoder.layers.0.linear1.weight", "encoder.layers.0.linear1.bias",
        "encoder.layers.0.linear2.weight", "encoder.layers.0.linear2.bias",
        "encoder.layers.0.norm1.weight", "encoder.layers.0.norm1.bias",
        "encoder.layers.0.norm2.weight", "encoder.layers.0.norm2.bias"});
    CHECK(text_encoder->log_tau() == nullptr);

    text.out_dim = 5;
    text.learnable_temperature = true;
    auto projected = make_model(text, generator);
    std::vector<std::string> names = parameter_names(*projected);
    CHECK(names.front() == "log_tau");
    CHECK(std::vector<std::string>(names.end() - 2, names.end()) ==
          std::vector<std::string>{"output_proj.weight", "output_proj.bias"});
    auto parameters = projected->named_parameters();
    CHECK(parameters[1].second->shape() == Shape{20, 8});   // token_embedding [vocab_size, d_model]
    CHECK(parameters[2].second->shape() == Shape{6, 8});    // position_embedding [max_len, d_model]
    CHECK(parameters.back().second->shape() == Shape{5});   // output_proj.bias [out_dim]
}

TEST_CASE("models: parameters in the requested dtype, learnable temperature at 0.07 and clamped") {
    for (Dtype dtype : kFloatDtypes) {
        Generator generator(16);
        ModelConfig config = sig_predictor_config();
        config.learnable_temperature = true;
        auto model = make_model(config, generator, dtype);
        for (Var* parameter : model->parameters()) CHECK(parameter->dtype() == dtype);
        REQUIRE(model->log_tau() != nullptr);
        CHECK(model->log_tau()->shape() == Shape{1});
        CHECK(temperature(*model) == doctest::Approx(0.07).epsilon(1e-6));
        model->log_tau()->set_value(Tensor::full({1}, std::log(5.0), dtype));
        CHECK(temperature(*model) == 1.0);  // max_temperature
        model->log_tau()->set_value(Tensor::full({1}, std::log(1e-4), dtype));
        CHECK(temperature(*model) == 0.01);  // min_temperature
    }
    Generator generator(16);
    auto fixed = make_model(sig_predictor_config(), generator);
    CHECK_ERROR_MENTIONS(temperature(*fixed), "no learnable temperature");
}

TEST_CASE("sig_predictor: padded tokens change nothing, wherever the padding is and whatever it holds") {
    Generator generator(17);
    ModelConfig config = sig_predictor_config();
    auto model = make_model(config, generator, Dtype::Float64);
    randomise_parameters(*model, generator);
    model->train(false);

    // Three real tokens, alone: [1, 3, in_dim].
    Tensor tokens = generator.normal({1, 3, 3}, Dtype::Float64);
    Values compact = model->encode(tokens, Tensor::full({1, 3}, 1.0, Dtype::Float64), nullptr).value().to_vector();

    // The same three tokens among six positions, the rest holding large garbage.
    Values token_values = tokens.to_vector();
    for (const std::vector<int64_t>& places : {std::vector<int64_t>{3, 4, 5},    // left padding
                                               std::vector<int64_t>{0, 1, 2},    // right padding
                                               std::vector<int64_t>{0, 2, 5}}) {  // gaps
        Values padded(18, 1e3), mask(6, 0.0);
        for (int64_t n = 0; n < 3; ++n) {
            mask[places[n]] = 1;
            for (int64_t d = 0; d < 3; ++d) padded[places[n] * 3 + d] = token_values[n * 3 + d];
        }
        Tensor padded_mask = Tensor::from_vector(mask, {1, 6}, Dtype::Float64);
        Var embedding = model->encode(Tensor::from_vector(padded, {1, 6, 3}, Dtype::Float64), padded_mask, nullptr);
        check_values(embedding.value(), compact, 1e-12,
                     "tokens at " + std::to_string(places[0]) + "," + std::to_string(places[1]) + "," +
                         std::to_string(places[2]));
        // An int64 mask means the same as a float one.
        check_values(model->encode(Tensor::from_vector(padded, {1, 6, 3}, Dtype::Float64), padded_mask.to(Dtype::Int64),
                                   nullptr).value(),
                     compact, 1e-12, "int64 mask");
    }
}

TEST_CASE("models: every output row has unit norm, in both dtypes") {
    for (Dtype dtype : kFloatDtypes) {
        Generator generator(18);
        auto sig_predictor = make_model(sig_predictor_config(), generator, dtype);
        ModelConfig text = text_encoder_config();
        auto text_encoder = make_model(text, generator, dtype);
        text.out_dim = 3;
        auto projected = make_model(text, generator, dtype);
        sig_predictor->train(false);
        Tensor mask = Tensor::from_indices({0, 1, 1, 1, 1, 0, 1, 0, 1, 1, 1, 1}, {3, 4});
        Tensor ids = Tensor::from_indices({5, 1, 19, 0, 3, 3, 7, 2, 11, 12, 13, 14}, {3, 4});
        Generator masks(19);
        std::vector<std::pair<std::string, Var>> outputs{
            {"sig_predictor", sig_predictor->encode(generator.normal({3, 4, 3}, dtype), mask, nullptr)},
            {"text_encoder", text_encoder->encode(ids, mask, &masks)},  // training mode: dropout on
            {"text_encoder out_dim 3", projected->encode(ids, mask, &masks)}};
        for (auto& [what, output] : outputs) {
            Values values = output.value().to_vector();
            const int64_t width = output.size(1);
            CHECK(output.size(0) == 3);
            for (int64_t row = 0; row < 3; ++row) {
                double square = 0;
                for (int64_t c = 0; c < width; ++c) square += values[row * width + c] * values[row * width + c];
                CHECK_MESSAGE(std::abs(std::sqrt(square) - 1.0) < tolerance_for(dtype), what << " row " << row);
            }
        }
        CHECK(outputs[2].second.size(1) == 3);
        CHECK(outputs[1].second.size(1) == 8);  // no output_proj: d_model
    }
}

TEST_CASE("text_encoder: position t is token t's, so the same tokens shifted give another embedding") {
    Generator generator(20);
    auto model = make_model(text_encoder_config(), generator, Dtype::Float64);
    model->train(false);
    Tensor right_padded = Tensor::from_indices({4, 9, 2, 0, 0}, {1, 5});
    Tensor left_padded = Tensor::from_indices({0, 0, 4, 9, 2}, {1, 5});
    Var right = model->encode(right_padded, Tensor::from_indices({1, 1, 1, 0, 0}, {1, 5}), nullptr);
    Var left = model->encode(left_padded, Tensor::from_indices({0, 0, 1, 1, 1}, {1, 5}), nullptr);
    CHECK(max_abs_difference(right.value(), left.value()) > 1e-3);
    // Right padding is invisible: the three tokens alone give the same embedding.
    Var alone = model->encode(Tensor::from_indices({4, 9, 2}, {1, 3}), Tensor::from_indices({1, 1, 1}, {1, 3}), nullptr);
    CHECK(max_abs_difference(right.value(), alone.value()) < 1e-12);
}

TEST_CASE("text_encoder: the lexical head is [mean ; a max over real tokens of log(1 + relu)], halves unit vectors") {
    Generator generator(26), same_start(26);
    ModelConfig config = text_encoder_config();
    config.dropout = 0;
    auto plain = make_model(config, same_start, Dtype::Float64);
    config.lexical_dim = 5;
    auto built = make_model(config, generator, Dtype::Float64);
    auto& model = dynamic_cast<TextEncoder&>(*built);
    // Every parameter the plain model has starts the same: the head's are drawn last.
    std::map<std::string, Var*> with_head;
    for (auto& [name, parameter] : model.named_parameters()) with_head[name] = parameter;
    CHECK(with_head.size() == plain->named_parameters().size() + 5);  // lexical_norm, lexical_proj, the part weight
    for (auto& [name, parameter] : plain->named_parameters())
        CHECK_MESSAGE(max_abs_difference(parameter->value(), with_head.at(name)->value()) == 0, name);
    CHECK(with_head.at("lexical_log_weight")->value().to_vector() == Values{0.0});  // the halves start equal
    randomise_lexical_head(model, generator);
    const double a = 1.7;  // the lexical half's weight, off its start
    with_head.at("lexical_log_weight")->set_value(Tensor::full({1}, std::log(a), Dtype::Float64));

    const int64_t B = 2, T = 4, D = 8, E = 5;
    Tensor ids = Tensor::from_indices({3, 7, 7, 12, 0, 5, 19, 0}, {B, T});
    Tensor mask = Tensor::from_indices({1, 1, 1, 1, 0, 1, 0, 0}, {B, T});  // row 1: one token amid padding
    Tensor out = model.encode(ids, mask, nullptr).value();
    REQUIRE(out.shape() == Shape{B, D + E});
    // The reference: the plain model's mean half, and the max of log(1 + relu) over the real
    // tokens, by loops over the head's own token states.
    Values mean_half = plain->encode(ids, mask, nullptr).value().to_vector();
    std::vector<int64_t> positions{0, 1, 2, 3};
    Var states = model.encoder.forward(model.token_embedding.forward(ids) +
                                           model.position_embedding.forward(Tensor::from_indices(positions, {T})),
                                       mask, nullptr);
    Values z = model.lexical_proj->forward(model.lexical_norm->forward(states)).value().to_vector();  // [B, T, E]
    Values mask_values = mask.to(Dtype::Float64).to_vector(), expected;
    for (int64_t b = 0; b < B; ++b) {
        Values lexical(E, 0.0);
        for (int64_t e = 0; e < E; ++e)
            for (int64_t t = 0; t < T; ++t)
                if (mask_values[b * T + t] != 0)
                    lexical[e] = std::max(lexical[e], std::log(1 + std::max(0.0, z[(b * T + t) * E + e])));
        double norm = 0;
        for (double value : lexical) norm += value * value;
        norm = std::sqrt(norm);
        // [mean ; a x / |x|] has length sqrt(1 + a^2).
        for (int64_t d = 0; d < D; ++d) expected.push_back(mean_half[b * D + d] / std::sqrt(1 + a * a));
        for (double value : lexical) expected.push_back(a * value / norm / std::sqrt(1 + a * a));
    }
    check_values(out, expected, 1e-12, "lexical text_encoder");
}

TEST_CASE("text_encoder: the term-weight head is [mean ; c log(1 + sum of each piece's token weights)], halves unit vectors") {
    Generator generator(27), same_start(27);
    ModelConfig config = text_encoder_config();
    config.dropout = 0;
    auto plain = make_model(config, same_start, Dtype::Float64);
    config.term_weights = true;
    auto built = make_model(config, generator, Dtype::Float64);
    auto& model = dynamic_cast<TextEncoder&>(*built);
    std::map<std::string, Var*> with_head;
    for (auto& [name, parameter] : model.named_parameters()) with_head[name] = parameter;
    CHECK(with_head.size() == plain->named_parameters().size() + 6);  // term_norm, term_weight, term_bias, c
    for (auto& [name, parameter] : plain->named_parameters())
        CHECK_MESSAGE(max_abs_difference(parameter->value(), with_head.at(name)->value()) == 0, name);
    CHECK(with_head.at("term_log_weight")->value().to_vector() == Values{0.0});  // the halves start equal
    const double c = 0.6;  // the terms' weight, off its start
    with_head.at("term_log_weight")->set_value(Tensor::full({1}, std::log(c), Dtype::Float64));
    CHECK(model.term_weight->bias.value().to_vector() == Values{1.0});  // every token starts near log 2
    CHECK(model.term_bias->weight.value().to_vector() == Values(config.vocab_size, 0.0));  // no piece favoured
    const int64_t B = 2, T = 4, D = 8, V = config.vocab_size;
    // Off the initial values: a random scale and shift, and a bias that puts the real token of
    // lowest z below 0 and the others above, so one token weighs 0 and the rest more.
    for (Var* parameter : {&model.term_norm->weight, &model.term_norm->bias, &model.term_bias->weight})
        parameter->set_value(generator.normal(parameter->shape(), Dtype::Float64));
    Tensor ids = Tensor::from_indices({3, 7, 7, 12, 0, 5, 19, 7}, {B, T});  // row 0 repeats piece 7
    Tensor mask = Tensor::from_indices({1, 1, 1, 1, 1, 1, 1, 0}, {B, T});  // row 1's piece 7 is padding
    Values mean_half = plain->encode(ids, mask, nullptr).value().to_vector();
    std::vector<int64_t> positions{0, 1, 2, 3};
    Var states = model.encoder.forward(model.token_embedding.forward(ids) +
                                           model.position_embedding.forward(Tensor::from_indices(positions, {T})),
                                       mask, nullptr);
    model.term_weight->bias.set_value(Tensor::zeros({1}, Dtype::Float64));
    Values z = model.term_weight->forward(model.term_norm->forward(states)).value().to_vector();  // [B, T, 1]
    Values piece_bias = model.term_bias->weight.value().to_vector();                             // [V, 1]
    for (int64_t i = 0; i < B * T; ++i) z[i] += piece_bias[ids.to_indices()[i]];
    Values real_z;
    for (int64_t i = 0; i < B * T; ++i)
        if (mask.to_indices()[i] != 0) real_z.push_back(z[i]);
    std::sort(real_z.begin(), real_z.end());
    const double shift = (real_z[0] + real_z[1]) / 2;
    model.term_weight->bias.set_value(Tensor::full({1}, -shift, Dtype::Float64));
    for (double& value : z) value -= shift;
    Tensor out = model.encode(ids, mask, nullptr).value();
    REQUIRE(out.shape() == Shape{B, D + V});
    std::vector<int64_t> id_values = ids.to_indices();
    Values mask_values = mask.to(Dtype::Float64).to_vector(), expected;
    int weighted_tokens = 0;
    for (int64_t b = 0; b < B; ++b) {
        Values sums(V, 0.0);
        for (int64_t t = 0; t < T; ++t)
            if (mask_values[b * T + t] != 0) {
                sums[id_values[b * T + t]] += std::log(1 + std::max(0.0, z[b * T + t]));
                weighted_tokens += z[b * T + t] > 0;
            }
        double norm = 0;
        for (double& value : sums) value = std::log(1 + value), norm += value * value;
        norm = std::sqrt(norm);
        for (int64_t d = 0; d < D; ++d) expected.push_back(mean_half[b * D + d] / std::sqrt(1 + c * c));
        for (double value : sums) expected.push_back(c * value / norm / std::sqrt(1 + c * c));
    }
    CHECK(weighted_tokens == 6);  // of the 7 real tokens: the case sees weights above 0 and one at 0
    check_values(out, expected, 1e-12, "term-weight text_encoder");
    // A piece that no real token of the text holds is exactly 0.
    CHECK(out.to_vector()[D + 0] == 0.0);
    CHECK(out.to_vector()[(D + V) + D + 7] == 0.0);  // row 1's piece 7 sits in padding only
}

TEST_CASE("models: dropout in training replays exactly from the same generator offset") {
    Generator generator(21);
    ModelConfig config = sig_predictor_config();
    config.dropout = 0.3;
    auto model = make_model(config, generator, Dtype::Float64);
    Tensor features = generator.normal({2, 4, 3}, Dtype::Float64);
    Tensor mask = Tensor::from_indices({1, 1, 1, 0, 0, 1, 1, 1}, {2, 4});

    Generator masks(22);
    Tensor first = model->encode(features, mask, &masks).value();
    Tensor second = model->encode(features, mask, &masks).value();  // new masks
    masks.set_offset(0);
    Tensor replayed = model->encode(features, mask, &masks).value();
    CHECK(max_abs_difference(first, replayed) == 0.0);
    CHECK(max_abs_difference(first, second) > 1e-3);
    model->train(false);
    Tensor evaluated = model->encode(features, mask, nullptr).value();
    CHECK(max_abs_difference(first, evaluated) > 1e-3);
    CHECK(max_abs_difference(evaluated, model->encode(features, mask, nullptr).value()) == 0.0);
}

TEST_CASE("gradient checks: every module and the three models pass against finite differences in float64") {
    CheckRegistry registry;
    register_module_checks(registry);
    const std::vector<std::string> expected_ops{"Linear", "Embedding", "LayerNorm", "Dropout", "MultiHeadAttention",
                                                "TransformerEncoderLayer", "TransformerEncoder", "sig_predictor",
                                                "text_encoder", "bert"};
    CHECK(registry.ops() == expected_ops);
    for (const std::string& op : expected_ops) {
        int cases = 0;
        for (const CheckCase& check : registry.cases()) {
            if (check.op != op) continue;
            ++cases;
            GradcheckResult result = run_check(check, Dtype::Float64, 1);
            CHECK_MESSAGE(result.passed, op << " " << check.description << ": max relative error "
                                            << result.max_rel_error);
        }
        CHECK_MESSAGE(cases >= 2, op << " has " << cases << " gradient checks, expected two or more");
    }
}

TEST_CASE("models: gradients reach every parameter (none is cut off from the graph)") {
    Generator generator(23);
    ModelConfig config = text_encoder_config();
    config.out_dim = 3;
    config.num_layers = 2;
    auto model = make_model(config, generator, Dtype::Float64);
    Generator masks(24);
    Tensor ids = Tensor::from_indices({1, 2, 3, 4, 5, 6, 7, 8}, {2, 4});
    Var embeddings = model->encode(ids, Tensor::from_indices({0, 1, 1, 1, 1, 1, 1, 1}, {2, 4}), &masks);
    mul(embeddings, Var(generator.normal({2, 3}, Dtype::Float64))).backward(Tensor::full({2, 3}, 1.0, Dtype::Float64));
    for (auto& [name, parameter] : model->named_parameters()) {
        REQUIRE_MESSAGE(parameter->grad().defined(), name << " got no gradient");
        CHECK_MESSAGE(max_abs(parameter->grad()) > 0, name << " got a zero gradient");
    }
}

TEST_CASE("models: bad configs and inputs throw one line naming the field or input") {
    Generator generator(25);
    auto config_error = [&](auto change, const char* fragment) {
        ModelConfig config = sig_predictor_config();
        change(config);
        CHECK_ERROR_MENTIONS(make_model(config, generator), fragment);
    };
    config_error([](ModelConfig& c) { c.nhead = 3; }, "nhead 3 must be positive and divide d_model 8");
    config_error([](ModelConfig& c) { c.activation = "tanh"; }, "unknown activation 'tanh'");
    config_error([](ModelConfig& c) { c.kind = "gpt"; }, "unknown kind 'gpt'");
    config_error([](ModelConfig& c) { c.in_dim = 0; }, "in_dim > 0");
    config_error([](ModelConfig& c) { c.out_dim = 0; }, "out_dim > 0");
    config_error([](ModelConfig& c) { c.dropout = 1.0; }, "dropout must be in [0, 1)");
    config_error([](ModelConfig& c) { c.num_layers = 0; }, "num_layers");
    config_error([](ModelConfig& c) { c.d_model = -8; }, "d_model");
    config_error([](ModelConfig& c) { c.layer_norm_eps = 0; }, "layer_norm_eps");
    config_error([](ModelConfig& c) { c.kind = "text_encoder"; }, "vocab_size");
    CHECK_ERROR_MENTIONS(make_model(sig_predictor_config(), generator, Dtype::Int64), "float32 or float64");

    auto sig_predictor = make_model(sig_predictor_config(), generator);
    sig_predictor->train(false);
    Tensor features = Tensor::zeros({2, 3, 3}, Dtype::Float32);
    Tensor mask = Tensor::from_indices({1, 1, 0, 0, 1, 1}, {2, 3});
    CHECK_ERROR_MENTIONS(sig_predictor->encode(Tensor::zeros({2, 3, 5}, Dtype::Float32), mask, nullptr), "in_dim = 3");
    CHECK_ERROR_MENTIONS(sig_predictor->encode(Tensor::from_indices({1, 2}, {1, 2}), mask, nullptr), "float");
    CHECK_ERROR_MENTIONS(sig_predictor->encode(features, Tensor::from_indices({1, 1, 1}, {1, 3}), nullptr),
                         "[B, T] = [2, 3]");
    CHECK_ERROR_MENTIONS(sig_predictor->encode(features, Tensor::from_indices({1, 1, 0, 0, 0, 0}, {2, 3}), nullptr),
                         "row 1 of mask [2, 3] has no token");
    CHECK_ERROR_MENTIONS(sig_predictor->encode(features, Tensor(), nullptr), "mask is missing");
    sig_predictor->train(true);
    CHECK_ERROR_MENTIONS(sig_predictor->encode(features, mask, nullptr), "needs a generator");

    auto text_encoder = make_model(text_encoder_config(), generator);
    text_encoder->train(false);
    Tensor long_ids = Tensor::from_indices(std::vector<int64_t>(7, 1), {1, 7});
    CHECK_ERROR_MENTIONS(text_encoder->encode(long_ids, Tensor::from_indices(std::vector<int64_t>(7, 1), {1, 7}), nullptr),
                         "T = 7 tokens but max_len is 6");
    CHECK_ERROR_MENTIONS(text_encoder->encode(Tensor::from_indices({3, 20}, {1, 2}), Tensor::from_indices({1, 1}, {1, 2}),
                                              nullptr),
                         "id 20");
    CHECK_ERROR_MENTIONS(text_encoder->encode(features, mask, nullptr), "int64 [B, T]");
}
