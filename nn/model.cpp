#include "nn/model.h"

#include <algorithm>
#include <cmath>

#include "nn/bert_encoder.h"
#include "nn/model_parts.h"
#include "nn/sig_predictor.h"
#include "nn/text_encoder.h"

namespace nce::nn {
namespace {

// The losses' floor on a learnable temperature (losses/loss_common.h, kMinTemperature): below
// it they hold tau constant, so dL/dlog_tau is 0.
constexpr double kLossTemperatureFloor = 1e-4;

// a · b, or an error: the size arithmetic on a config read from a file never wraps.
int64_t checked_product(int64_t a, int64_t b) {
    int64_t product = 0;
    NCE_CHECK(!__builtin_mul_overflow(a, b, &product), "model config: the parameter sizes overflow ({} x {})", a, b);
    return product;
}

}  // namespace

const ModelConfig& validate_config(const ModelConfig& config) {
    const auto& c = config;
    NCE_CHECK(c.kind == "sig_predictor" || c.kind == "text_encoder" || c.kind == "bert",
              "model config: unknown kind '{}'; use sig_predictor, text_encoder or bert", c.kind);
    if (c.kind == "bert") {
        validate_bert_config(c);
    } else if (c.kind == "sig_predictor") {
        NCE_CHECK(c.in_dim > 0, "model config: sig_predictor needs in_dim > 0 (the feature size), got {}", c.in_dim);
        NCE_CHECK(c.out_dim > 0, "model config: sig_predictor needs out_dim > 0 (its output_proj size), got {}",
                  c.out_dim);
    } else {
        NCE_CHECK(c.vocab_size > 0, "model config: text_encoder needs vocab_size > 0, got {}", c.vocab_size);
        NCE_CHECK(c.max_len > 0, "model config: text_encoder needs max_len > 0 (the number of positions), got {}",
                  c.max_len);
        NCE_CHECK(c.out_dim >= 0, "model config: out_dim must be >= 0 (0: no output projection), got {}", c.out_dim);
    }
    NCE_CHECK(c.kind != "sig_predictor" || c.lexical_dim == 0,
              "model config: lexical_dim is a text_encoder's (a sig_predictor has no lexical head), got {}",
              c.lexical_dim);
    NCE_CHECK(c.kind != "sig_predictor" || !c.term_weights,
              "model config: term_weights is a text_encoder's (a sig_predictor reads no tokens)");
    NCE_CHECK(c.d_model > 0, "model config: d_model must be positive, got {}", c.d_model);
    NCE_CHECK(c.nhead > 0 && c.d_model % c.nhead == 0,
              "model config: nhead {} must be positive and divide d_model {} (each head gets d_model / nhead)",
              c.nhead, c.d_model);
    NCE_CHECK(c.dim_feedforward > 0, "model config: dim_feedforward must be positive, got {}", c.dim_feedforward);
    NCE_CHECK(c.num_layers > 0, "model config: num_layers must be positive, got {}", c.num_layers);
    NCE_CHECK(c.dropout >= 0 && c.dropout < 1, "model config: dropout must be in [0, 1), got {}", c.dropout);
    NCE_CHECK(c.activation == "relu" || c.activation == "gelu",
              "model config: unknown activation '{}'; use relu or gelu", c.activation);
    NCE_CHECK(c.layer_norm_eps > 0 && std::isfinite(c.layer_norm_eps),
              "model config: layer_norm_eps must be positive and finite, got {}", c.layer_norm_eps);
    // The upper limits, and no negative size in a field this kind does not use. A used field
    // must be at least 1 (out_dim of a text_encoder may be 0: no output projection).
    const bool text = c.kind != "sig_predictor";  // text_encoder or bert
    struct Range {
        const char* field;
        int64_t value, low, high;
    };
    for (const Range& range : {Range{"in_dim", c.in_dim, text ? 0 : 1, kMaxModelWidth},
                               Range{"vocab_size", c.vocab_size, text ? 1 : 0, kMaxVocabSize},
                               Range{"max_len", c.max_len, text ? 1 : 0, kMaxModelWidth},
                               Range{"d_model", c.d_model, 1, kMaxModelWidth},
                               Range{"dim_feedforward", c.dim_feedforward, 1, kMaxModelWidth},
                               Range{"num_layers", c.num_layers, 1, kMaxNumLayers},
                               Range{"out_dim", c.out_dim, text ? 0 : 1, kMaxModelWidth},
                               Range{"lexical_dim", c.lexical_dim, 0, kMaxModelWidth}})
        NCE_CHECK(range.value >= range.low && range.value <= range.high,
                  "model config: {} = {} is outside the allowed range [{}, {}]", range.field, range.value, range.low,
                  range.high);
    for (const auto& [field, prompt] : {std::pair<const char*, const std::string&>{"query_prompt", c.query_prompt},
                                        {"passage_prompt", c.passage_prompt}})
        NCE_CHECK(prompt.size() <= ModelConfig::kMaxPromptBytes,
                  "model config: {} has {} bytes; a prompt may have at most {}", field, prompt.size(),
                  ModelConfig::kMaxPromptBytes);
    if (c.learnable_temperature)
        NCE_CHECK(c.min_temperature >= kLossTemperatureFloor && c.min_temperature <= c.max_temperature,
                  "model config: need {} <= min_temperature <= max_temperature (below {} the losses hold tau "
                  "constant and log_tau gets no gradient), got {} and {}",
                  kLossTemperatureFloor, kLossTemperatureFloor, c.min_temperature, c.max_temperature);
    return config;
}

std::map<std::string, Shape> parameter_shapes(const ModelConfig& config) {
    const ModelConfig& c = validate_config(config);
    if (c.kind == "bert") return bert_parameter_shapes(c);
    const int64_t d = c.d_model, ff = c.dim_feedforward;
    std::map<std::string, Shape> shapes;
    auto linear = [&](const std::string& name, int64_t in, int64_t out) {
        shapes[name + ".weight"] = {out, in};
        shapes[name + ".bias"] = {out};
    };
    if (c.kind == "sig_predictor") {
        linear("input_proj", c.in_dim, d);
        linear("output_proj", d, c.out_dim);
    } else {
        shapes["token_embedding.weight"] = {c.vocab_size, d};
        shapes["position_embedding.weight"] = {c.max_len, d};
        if (c.out_dim > 0) linear("output_proj", d, c.out_dim);
        if (c.lexical_dim > 0) {
            shapes["lexical_norm.weight"] = {d};
            shapes["lexical_norm.bias"] = {d};
            linear("lexical_proj", d, c.lexical_dim);
            shapes["lexical_log_weight"] = {1};
        }
        if (c.term_weights) {
            shapes["term_norm.weight"] = {d};
            shapes["term_norm.bias"] = {d};
            linear("term_weight", d, 1);
            shapes["term_bias.weight"] = {c.vocab_size, 1};
            shapes["term_log_weight"] = {1};
        }
    }
    // nn.TransformerEncoderLayer's tensors (transformer_encoder_layer.h, multi_head_attention.h).
    for (int64_t i = 0; i < c.num_layers; ++i) {
        std::string layer = "encoder.layers." + std::to_string(i) + ".";
        shapes[layer + "self_attn.in_proj_weight"] = {checked_product(3, d), d};
        shapes[layer + "self_attn.in_proj_bias"] = {checked_product(3, d)};
        linear(layer + "self_attn.out_proj", d, d);
        linear(layer + "linear1", d, ff);
        linear(layer + "linear2", ff, d);
        for (const char* norm : {"norm1", "norm2"}) {
            shapes[layer + norm + ".weight"] = {d};
            shapes[layer + norm + ".bias"] = {d};
        }
    }
    if (c.learnable_temperature) shapes["log_tau"] = {1};
    return shapes;
}

int64_t parameter_count(const ModelConfig& config) {
    int64_t count = 0;
    for (const auto& [name, shape] : parameter_shapes(config)) {
        int64_t numel = 1;
        for (int64_t size : shape) numel = checked_product(numel, size);
        NCE_CHECK(!__builtin_add_overflow(count, numel, &count),
                  "model config: the parameter count overflows at '{}' {}", name, shape_string(shape));
    }
    return count;
}

std::unique_ptr<EmbeddingModel> make_model(const ModelConfig& config, Generator& generator, Dtype dtype) {
    validate_config(config);
    NCE_CHECK(is_floating(dtype), "make_model: parameters must be float32 or float64, got {}", dtype_name(dtype));
    if (config.kind == "sig_predictor") return std::make_unique<SigPredictor>(config, generator, dtype);
    if (config.kind == "bert") return std::make_unique<BertEncoder>(config, generator, dtype);
    return std::make_unique<TextEncoder>(config, generator, dtype);
}

void EmbeddingModel::clamp_temperature() {
    Var* parameter = log_tau();
    if (parameter == nullptr) return;
    double value = parameter->value().item();
    double clamped = std::clamp(value, std::log(config_.min_temperature), std::log(config_.max_temperature));
    if (clamped != value)
        parameter->set_value(Tensor::full(parameter->shape(), clamped, parameter->dtype(), parameter->value().device()));
}

double temperature(EmbeddingModel& model) {
    const ModelConfig& config = model.config();
    Var* log_tau = model.log_tau();
    NCE_CHECK(log_tau != nullptr,
              "temperature: this {} has no learnable temperature (config.learnable_temperature is false); the "
              "loss's tau sets it",
              config.kind);
    return std::clamp(std::exp(log_tau->value().item()), config.min_temperature, config.max_temperature);
}

TransformerEncoderLayerOptions encoder_layer_options(const ModelConfig& config) {
    TransformerEncoderLayerOptions options;
    options.d_model = config.d_model;
    options.nhead = config.nhead;
    options.dim_feedforward = config.dim_feedforward;
    options.dropout = config.dropout;
    options.activation = parse_activation(config.activation);
    options.norm_first = config.norm_first;
    options.layer_norm_eps = config.layer_norm_eps;
    return options;
}

void check_token_mask(const Tensor& mask, int64_t batch, int64_t tokens, const std::string& model) {
    NCE_CHECK(batch > 0 && tokens > 0, "{}: the input has B = {} sequences of T = {} tokens; both must be positive",
              model, batch, tokens);
    NCE_CHECK(mask.defined(), "{}: the mask is missing; pass a [B, T] = [{}, {}] mask (nonzero = token)", model, batch,
              tokens);
    NCE_CHECK(mask.rank() == 2 && mask.size(0) == batch && mask.size(1) == tokens,
              "{}: mask {} does not match the input; it must be [B, T] = [{}, {}] (nonzero = token)", model,
              shape_string(mask.shape()), batch, tokens);
    backend_for(mask.device())
        .check_rows_nonzero(mask, model + ": row {} of mask " + shape_string(mask.shape()) +
                                      " has no token; every sequence needs at least one (nonzero entry)");
}

void check_generator(const EmbeddingModel& model, Generator* generator) {
    const ModelConfig& config = model.config();
    NCE_CHECK(generator != nullptr || !model.training() || config.dropout == 0,
              "{}: training mode with dropout {} needs a generator for the dropout masks; pass one, or call "
              "train(false) to encode without dropout",
              config.kind, config.dropout);
}

Var initial_log_tau(Dtype dtype) { return Var::parameter(Tensor::full({1}, std::log(0.07), dtype)); }

}  // namespace nce::nn
