#include "nn/bert_encoder.h"

#include <cmath>
#include <string>

#include "nn/model_parts.h"

namespace nce::nn {
namespace {

constexpr double kInitializerRange = 0.02;
constexpr double kMaxPoolingPadding = -1e9;  // sentence-transformers' value for padding before the max

BertLayerOptions layer_options(const ModelConfig& config) {
    BertLayerOptions options;
    options.hidden_size = config.d_model;
    options.num_heads = config.nhead;
    options.intermediate_size = config.dim_feedforward;
    options.layer_norm_eps = config.layer_norm_eps;
    options.hidden_dropout = config.dropout;
    options.attention_dropout = config.attention_dropout;
    options.gelu = config.activation == "gelu";
    return options;
}

void bert_initialise(Embedding& embedding, Generator& generator) {
    embedding.weight.set_value(
        generator.normal(embedding.weight.shape(), embedding.weight.dtype(), 0.0, kInitializerRange));
}

// The position of every token for a position offset p > 0 (RoBERTa, XLM-R), [B, T] (bert_encoder.h).
Tensor position_ids(const Tensor& mask, int64_t offset, Device device) {
    const int64_t batch = mask.size(0), tokens = mask.size(1);
    std::vector<double> is_token = mask.to(Device::CPU).to(Dtype::Float64).to_vector();
    std::vector<int64_t> positions(is_token.size());
    for (int64_t b = 0; b < batch; ++b) {
        int64_t seen = 0;
        for (int64_t t = 0; t < tokens; ++t) {
            const size_t i = static_cast<size_t>(b * tokens + t);
            if (is_token[i] != 0) {
                positions[i] = offset + seen++;  // p, p+1, ... over the real tokens
            } else {
                positions[i] = offset - 1;  // padding_idx
            }
        }
    }
    return Tensor::from_indices(positions, {batch, tokens}).to(device);
}

// The places b·T + t of the real tokens of a [B, T] mask, in order, int64 [N]; undefined when
// every place is a token (nothing to leave out) or when the mask is on a device (reading it
// would be a round trip to the host each forward; there the layers run every place).
Tensor real_token_rows(const Tensor& mask) {
    if (mask.device() != Device::CPU) return Tensor();
    std::vector<double> is_token = mask.to(Dtype::Float64).to_vector();
    std::vector<int64_t> rows;
    rows.reserve(is_token.size());
    for (size_t place = 0; place < is_token.size(); ++place)
        if (is_token[place] != 0) rows.push_back(static_cast<int64_t>(place));
    if (rows.size() == is_token.size()) return Tensor();
    return Tensor::from_indices(rows, {static_cast<int64_t>(rows.size())});
}

}  // namespace

void validate_bert_config(const ModelConfig& c) {
    NCE_CHECK(c.vocab_size > 0, "model config: bert needs vocab_size > 0, got {}", c.vocab_size);
    NCE_CHECK(c.max_len > 0, "model config: bert needs max_len > 0 (the longest input, max_seq_length), got {}",
              c.max_len);
    NCE_CHECK(c.position_offset >= 0, "model config: position_offset must be >= 0, got {}", c.position_offset);
    NCE_CHECK(c.max_position_embeddings >= 1 && c.max_position_embeddings <= kMaxModelWidth,
              "model config: max_position_embeddings = {} is outside [1, {}]", c.max_position_embeddings,
              kMaxModelWidth);
    NCE_CHECK(c.max_len + c.position_offset <= c.max_position_embeddings,
              "model config: max_len {} + position_offset {} needs {} position embeddings, the table has {}; lower "
              "max_len (max_seq_length) to at most {}",
              c.max_len, c.position_offset, c.max_len + c.position_offset, c.max_position_embeddings,
              c.max_position_embeddings - c.position_offset);
    NCE_CHECK(c.type_vocab_size >= 1 && c.type_vocab_size <= kMaxVocabSize,
              "model config: bert needs type_vocab_size in [1, {}], got {}", kMaxVocabSize, c.type_vocab_size);
    NCE_CHECK(c.pooling == "mean" || c.pooling == "cls" || c.pooling == "max" || c.pooling == "mean_sqrt_len",
              "model config: unknown pooling '{}'; use mean, cls, max or mean_sqrt_len", c.pooling);
    NCE_CHECK(c.attention_dropout >= 0 && c.attention_dropout < 1,
              "model config: attention_dropout must be in [0, 1), got {}", c.attention_dropout);
    NCE_CHECK(!c.norm_first, "model config: bert is post-LN; norm_first must be false");
    NCE_CHECK(c.out_dim == 0 && c.lexical_dim == 0 && !c.term_weights,
              "model config: bert has no output projection or lexical heads; out_dim, lexical_dim and term_weights "
              "must be 0, 0 and false");
}

std::map<std::string, Shape> bert_parameter_shapes(const ModelConfig& c) {
    const int64_t d = c.d_model, ff = c.dim_feedforward;
    std::map<std::string, Shape> shapes;
    auto linear = [&](const std::string& name, int64_t in, int64_t out) {
        shapes[name + ".weight"] = {out, in};
        shapes[name + ".bias"] = {out};
    };
    auto norm = [&](const std::string& name) {
        shapes[name + ".weight"] = {d};
        shapes[name + ".bias"] = {d};
    };
    shapes["embeddings.word_embeddings.weight"] = {c.vocab_size, d};
    shapes["embeddings.position_embeddings.weight"] = {c.max_position_embeddings, d};
    shapes["embeddings.token_type_embeddings.weight"] = {c.type_vocab_size, d};
    norm("embeddings.LayerNorm");
    for (int64_t i = 0; i < c.num_layers; ++i) {
        const std::string layer = "encoder.layer." + std::to_string(i) + ".";
        for (const char* projection : {"query", "key", "value"}) linear(layer + "attention.self." + projection, d, d);
        linear(layer + "attention.output.dense", d, d);
        norm(layer + "attention.output.LayerNorm");
        linear(layer + "intermediate.dense", d, ff);
        linear(layer + "output.dense", ff, d);
        norm(layer + "output.LayerNorm");
    }
    if (c.learnable_temperature) shapes["log_tau"] = {1};
    return shapes;
}

BertEmbeddings::BertEmbeddings(const ModelConfig& config, Generator& generator, Dtype dtype)
    : word_embeddings(config.vocab_size, config.d_model, generator, dtype),
      position_embeddings(config.max_position_embeddings, config.d_model, generator, dtype),
      token_type_embeddings(config.type_vocab_size, config.d_model, generator, dtype),
      layer_norm(config.d_model, config.layer_norm_eps, dtype) {
    for (Embedding* table : {&word_embeddings, &position_embeddings, &token_type_embeddings})
        bert_initialise(*table, generator);
    register_module("word_embeddings", word_embeddings);
    register_module("position_embeddings", position_embeddings);
    register_module("token_type_embeddings", token_type_embeddings);
    register_module("LayerNorm", layer_norm);
}

BertLayerStack::BertLayerStack(const ModelConfig& config, Generator& generator, Dtype dtype) {
    for (int64_t i = 0; i < config.num_layers; ++i) {
        layer.push_back(std::make_unique<BertLayer>(layer_options(config), generator, dtype));
        register_module("layer." + std::to_string(i), *layer.back());
    }
}

BertEncoder::BertEncoder(const ModelConfig& config, Generator& generator, Dtype dtype)
    : EmbeddingModel(validate_config(config)),
      embeddings(config, generator, dtype),
      encoder(config, generator, dtype) {
    NCE_CHECK(config.kind == "bert", "BertEncoder: config.kind is '{}', expected 'bert'", config.kind);
    register_module("embeddings", embeddings);
    register_module("encoder", encoder);
    if (config.learnable_temperature) {
        log_tau_ = initial_log_tau(dtype);
        register_parameter("log_tau", log_tau_);
    }
}

Var BertEncoder::token_states(const Tensor& input, const Tensor& mask, Generator* generator) {
    NCE_CHECK(input.defined() && input.dtype() == Dtype::Int64 && input.rank() == 2,
              "bert: ids must be int64 [B, T], got {} {}", input.defined() ? dtype_name(input.dtype()) : "undefined",
              input.defined() ? shape_string(input.shape()) : "");
    const int64_t batch = input.size(0), tokens = input.size(1);
    NCE_CHECK(tokens <= config_.max_len,
              "bert: ids {} have T = {} tokens but max_len (max_seq_length) is {}; truncate the ids to {} tokens",
              shape_string(input.shape()), tokens, config_.max_len, config_.max_len);
    check_token_mask(mask, batch, tokens, "bert");
    check_generator(*this, generator);

    // e = (word + token type 0) + position, in Hugging Face's order of the sums.   [B, T, D]
    Var words = embeddings.word_embeddings.forward(input);                                  // [B, T, D]
    Var type_zero = slice(embeddings.token_type_embeddings.weight, 0, 0, 1);               // row 0   [1, D]
    // BERT's positions are 0..T-1 in every row: the table's first T rows, sliced where it is.
    // RoBERTa's count the real tokens, so they come from the mask (position_ids, on the host).
    Var positions = config_.position_offset == 0
                        ? slice(embeddings.position_embeddings.weight, 0, 0, tokens)        // [T, D]
                        : embeddings.position_embeddings.forward(
                              position_ids(mask, config_.position_offset, input.device()));  // [B, T, D]
    Var states = embeddings.layer_norm.forward((words + type_zero) + positions);
    if (training() && config_.dropout > 0) states = dropout(states, config_.dropout, *generator, true);
    return encoder.forward(states, mask, generator);  // [B, T, D]
}

// The layers run on the real tokens' rows alone (real_token_rows): a padding place costs no
// GEMM, layer norm or GELU, and its state comes back 0. Each real row is computed exactly as
// with the padding in (attention masks padding keys either way).
Var BertLayerStack::forward(const Var& x, const Tensor& mask, Generator* generator) const {
    const int64_t batch = x.size(0), tokens = x.size(1), width = x.size(2);
    const Tensor rows = real_token_rows(mask);                                  // [N] or undefined
    Var h = reshape(x, {batch * tokens, width});                               // [B·T, D]
    if (rows.defined()) h = index_select(h, rows);                             // [N, D]
    for (const auto& each : layer) {
        if (!checkpoint_activations) {
            h = each->forward(h, mask, rows, generator);
            continue;
        }
        // The closure outlives this call (the backward runs it again): the layer by pointer,
        // the mask and rows by value.
        BertLayer* recomputed = each.get();
        auto run_layer = [recomputed, mask, rows, generator](const Var& input) {
            return recomputed->forward(input, mask, rows, generator);
        };
        h = checkpoint(run_layer, h, each->parameters(), generator);
    }
    if (rows.defined()) h = index_add(h, rows, batch * tokens);                // [B·T, D], padding 0
    return reshape(h, {batch, tokens, width});                                 // [B, T, D]
}

Var BertEncoder::encode(const Tensor& input, const Tensor& mask, Generator* generator) {
    Var states = token_states(input, mask, generator);  // [B, T, D]
    const int64_t batch = input.size(0), tokens = input.size(1);
    Var pooled;                                         // [B, D]
    if (config_.pooling == "cls") {
        pooled = reshape(slice(states, 1, 0, 1), {batch, config_.d_model});
    } else if (config_.pooling == "max") {
        // Padding at -1e9 before the max, as sentence-transformers does; the max's gradient
        // goes to the first maximal real token.
        std::vector<double> penalty = mask.to(Device::CPU).to(Dtype::Float64).to_vector();
        for (double& value : penalty) value = value != 0 ? 0.0 : kMaxPoolingPadding;
        Tensor padding = Tensor::from_vector(penalty, {batch, tokens, 1}, states.dtype()).to(input.device());
        pooled = max(states + Var(padding), 1);
    } else {
        pooled = masked_mean_pool(states, mask);
        if (config_.pooling == "mean_sqrt_len") {
            // sum / sqrt(n) = mean · sqrt(n), n the row's real tokens.   [B, 1]
            std::vector<double> is_token = mask.to(Device::CPU).to(Dtype::Float64).to_vector();
            std::vector<double> root(static_cast<size_t>(batch), 0.0);
            for (int64_t b = 0; b < batch; ++b) {
                double count = 0;
                for (int64_t t = 0; t < tokens; ++t) count += is_token[static_cast<size_t>(b * tokens + t)] != 0;
                root[static_cast<size_t>(b)] = std::sqrt(count);
            }
            pooled = pooled * Var(Tensor::from_vector(root, {batch, 1}, states.dtype()).to(input.device()));
        }
    }
    return config_.normalize ? l2_normalize(pooled) : pooled;
}

}  // namespace nce::nn
