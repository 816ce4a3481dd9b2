#include "nn/module_checks.h"

#include <functional>
#include <memory>
#include <tuple>

#include "nn/bert_encoder.h"
#include "nn/dropout.h"
#include "nn/embedding.h"
#include "nn/layer_norm.h"
#include "nn/linear.h"
#include "nn/multi_head_attention.h"
#include "nn/sig_predictor.h"
#include "nn/text_encoder.h"
#include "nn/transformer_encoder.h"
#include "nn/transformer_encoder_layer.h"

namespace nce::nn {
namespace {

// How a module is checked: the checked function's inputs are the module's data inputs
// (from make_data) followed by its parameters in named_parameters() order.
//   build:     a fresh module of the right sizes (its initial values do not matter)
//   make_data: the inputs the module reads (features, ids); float ones get a gradient
//              unless listed in constant_data (input indices: the data first, then the
//              parameters; a listed parameter is held constant)
//   run:       the forward, given the module (parameters already bound) and the data inputs
template <typename M>
struct ModuleCheck {
    std::string op, description;
    std::function<std::unique_ptr<M>(Generator&, Dtype)> build;
    std::function<std::vector<Tensor>(Generator&)> make_data;
    std::function<Var(M&, const std::vector<Var>&)> run;
    std::vector<int> constant_data = {};
};

// Makes the module's parameters the given Vars, in named_parameters() order, so the gradient
// of its output flows to them (the check differentiates with respect to the parameters).
void bind_parameters(Module& module, const std::vector<Var>& values, size_t first) {
    auto parameters = module.named_parameters();
    NCE_CHECK(values.size() == first + parameters.size(), "module check: {} parameter inputs for {} parameters",
              values.size() - first, parameters.size());
    for (size_t i = 0; i < parameters.size(); ++i) {
        auto& [name, parameter] = parameters[i];
        NCE_CHECK(values[first + i].shape() == parameter->shape(), "module check: input for {} is {}, expected {}",
                  name, shape_string(values[first + i].shape()), shape_string(parameter->shape()));
        *parameter = values[first + i];
    }
}

template <typename M>
void add_module_check(CheckRegistry& registry, const ModuleCheck<M>& check) {
    Generator probe(0);
    const size_t data_inputs = check.make_data(probe).size();  // the parameters follow them
    registry.add({check.op, check.description,
                  [check](Generator& g, Dtype) {
                      std::vector<Tensor> inputs = check.make_data(g);
                      // The module's own initial values, moved off special points (LayerNorm's
                      // ones, the zero biases) so every parameter is checked at a generic value.
                      std::unique_ptr<M> module = check.build(g, Dtype::Float64);
                      for (auto& [name, parameter] : module->named_parameters())
                          inputs.push_back(parameter->value() + g.normal(parameter->shape(), Dtype::Float64) * 0.2);
                      return inputs;
                  },
                  [check, data_inputs](const std::vector<Var>& x) {
                      // The checked dtype: the parameters' (Dropout has none: its input's).
                      Dtype dtype = x.size() > data_inputs ? x[data_inputs].dtype() : x[0].dtype();
                      Generator unused(0);
                      std::unique_ptr<M> module = check.build(unused, dtype);
                      bind_parameters(*module, x, data_inputs);
                      std::vector<Var> data(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(data_inputs));
                      return check.run(*module, data);
                  },
                  check.constant_data});
}

// A mask [rows, columns] from a fixed 0/1 pattern (1 = token), in the given dtype.
Tensor fixed_mask(const std::vector<double>& pattern, int64_t rows, int64_t columns, Dtype dtype) {
    if (dtype == Dtype::Int64) {
        std::vector<int64_t> values(pattern.begin(), pattern.end());
        return Tensor::from_indices(values, {rows, columns});
    }
    return Tensor::from_vector(pattern, {rows, columns}, dtype);
}

// Seed of the dropout masks in the "dropout on" cases: every evaluation starts a fresh
// generator with it, so the finite differences see the same masks as the backward.
constexpr uint64_t kMaskSeed = 7;

void add_linear_checks(CheckRegistry& registry) {
    for (auto [description, x_shape, out] : {std::tuple{"x [2,3,4] -> out 5", Shape{2, 3, 4}, int64_t{5}},
                                             std::tuple{"x [3,4] -> out 2", Shape{3, 4}, int64_t{2}}}) {
        add_module_check<Linear>(registry, {"Linear", description,
            [in = x_shape.back(), out = out](Generator& g, Dtype dtype) { return std::make_unique<Linear>(in, out, g, dtype); },
            [x_shape = x_shape](Generator& g) { return std::vector<Tensor>{g.normal(x_shape, Dtype::Float64)}; },
            [](Linear& linear, const std::vector<Var>& x) { return linear.forward(x[0]); }});
    }
}

void add_embedding_checks(CheckRegistry& registry) {
    struct Case {
        const char* description;
        int64_t rows, dim;
        std::vector<int64_t> ids;
        Shape ids_shape;
    };
    for (const Case& c : {Case{"table [6,3], ids [2,4] with repeats", 6, 3, {0, 5, 2, 2, 3, 0, 5, 1}, {2, 4}},
                          Case{"table [4,2], ids [5]", 4, 2, {3, 3, 1, 0, 3}, {5}}}) {
        add_module_check<Embedding>(registry, {"Embedding", c.description,
            [c](Generator& g, Dtype dtype) { return std::make_unique<Embedding>(c.rows, c.dim, g, dtype); },
            [c](Generator&) { return std::vector<Tensor>{Tensor::from_indices(c.ids, c.ids_shape)}; },
            [](Embedding& embedding, const std::vector<Var>& x) { return embedding.forward(x[0].value()); }});
    }
}

void add_layer_norm_checks(CheckRegistry& registry) {
    for (auto [description, x_shape] : {std::pair{"x [2,3,4]", Shape{2, 3, 4}}, std::pair{"x [5,6]", Shape{5, 6}}}) {
        add_module_check<LayerNorm>(registry, {"LayerNorm", description,
            [dim = x_shape.back()](Generator&, Dtype dtype) { return std::make_unique<LayerNorm>(dim, 1e-5, dtype); },
            [x_shape = x_shape](Generator& g) { return std::vector<Tensor>{g.normal(x_shape, Dtype::Float64)}; },
            [](LayerNorm& norm, const std::vector<Var>& x) { return norm.forward(x[0]); }});
    }
}

void add_dropout_checks(CheckRegistry& registry) {
    for (bool on : {true, false}) {
        add_module_check<Dropout>(registry, {"Dropout", on ? "x [3,4], p = 0.3, dropout on" : "x [3,4], p = 0.3, eval",
            [](Generator&, Dtype) { return std::make_unique<Dropout>(0.3); },
            [](Generator& g) { return std::vector<Tensor>{g.normal({3, 4}, Dtype::Float64)}; },
            [on](Dropout& dropout, const std::vector<Var>& x) {
                dropout.train(on);
                Generator masks(kMaskSeed);
                return dropout.forward(x[0], &masks);
            }});
    }
}

void add_attention_checks(CheckRegistry& registry) {
    struct Case {
        const char* description;
        Shape x_shape;
        int64_t heads;
        std::vector<double> mask;  // [B, T]: 1 = token; empty = no mask
        Dtype mask_dtype;          // int64 or the checked float dtype (Float64 stands for it)
        double dropout;            // > 0: training mode, dropout on
    };
    const std::vector<Case> cases{
        {"x [2,4,6], 2 heads, left pad + gap", {2, 4, 6}, 2, {0, 1, 1, 1, 1, 0, 1, 1}, Dtype::Int64, 0},
        {"x [1,3,4], 1 head, no mask", {1, 3, 4}, 1, {}, Dtype::Int64, 0},
        {"x [2,3,6], 3 heads, float mask", {2, 3, 6}, 3, {1, 1, 0, 0, 0, 1}, Dtype::Float64, 0},
        {"x [2,4,4], 2 heads, masked, dropout on", {2, 4, 4}, 2, {0, 1, 1, 1, 1, 1, 0, 1}, Dtype::Int64, 0.3},
    };
    for (const Case& c : cases) {
        add_module_check<MultiHeadAttention>(registry, {"MultiHeadAttention", c.description,
            [c](Generator& g, Dtype dtype) {
                return std::make_unique<MultiHeadAttention>(c.x_shape[2], c.heads, c.dropout, g, dtype);
            },
            [c](Generator& g) { return std::vector<Tensor>{g.normal(c.x_shape, Dtype::Float64)}; },
            [c](MultiHeadAttention& attention, const std::vector<Var>& x) {
                Tensor mask;
                if (!c.mask.empty())
                    mask = fixed_mask(c.mask, c.x_shape[0], c.x_shape[1],
                                      c.mask_dtype == Dtype::Int64 ? Dtype::Int64 : x[0].dtype());
                attention.train(c.dropout > 0);
                Generator masks(kMaskSeed);
                return attention.forward(x[0], mask, &masks);
            }});
    }
}

// Options of a tiny encoder layer: d_model 4, 2 heads, feed-forward 6.
TransformerEncoderLayerOptions tiny_layer(Activation activation, bool norm_first, double dropout) {
    TransformerEncoderLayerOptions options;
    options.d_model = 4;
    options.nhead = 2;
    options.dim_feedforward = 6;
    options.dropout = dropout;
    options.activation = activation;
    options.norm_first = norm_first;
    return options;
}

void add_encoder_layer_checks(CheckRegistry& registry) {
    struct Case {
        const char* description;
        TransformerEncoderLayerOptions options;
        Shape x_shape;
        std::vector<double> mask;
    };
    const std::vector<Case> cases{
        {"x [2,4,4], post-norm relu, left pad", tiny_layer(Activation::Relu, false, 0), {2, 4, 4},
         {0, 0, 1, 1, 1, 1, 1, 0}},
        {"x [2,3,4], pre-norm gelu, gap", tiny_layer(Activation::Gelu, true, 0), {2, 3, 4}, {1, 0, 1, 1, 1, 1}},
        {"x [2,3,4], post-norm gelu, dropout on", tiny_layer(Activation::Gelu, false, 0.2), {2, 3, 4},
         {0, 1, 1, 1, 1, 0}},
        {"x [2,3,4], pre-norm relu, dropout on", tiny_layer(Activation::Relu, true, 0.2), {2, 3, 4},
         {1, 1, 1, 0, 1, 1}},
    };
    for (const Case& c : cases) {
        add_module_check<TransformerEncoderLayer>(registry, {"TransformerEncoderLayer", c.description,
            [c](Generator& g, Dtype dtype) { return std::make_unique<TransformerEncoderLayer>(c.options, g, dtype); },
            [c](Generator& g) { return std::vector<Tensor>{g.normal(c.x_shape, Dtype::Float64)}; },
            [c](TransformerEncoderLayer& layer, const std::vector<Var>& x) {
                layer.train(c.options.dropout > 0);
                Generator masks(kMaskSeed);
                return layer.forward(x[0], fixed_mask(c.mask, c.x_shape[0], c.x_shape[1], Dtype::Int64), &masks);
            }});
    }
}

void add_encoder_checks(CheckRegistry& registry) {
    for (bool norm_first : {false, true}) {
        TransformerEncoderLayerOptions options = tiny_layer(Activation::Gelu, norm_first, 0);
        add_module_check<TransformerEncoder>(registry, {"TransformerEncoder",
            norm_first ? "2 pre-norm layers, x [2,3,4], left pad" : "2 post-norm layers, x [2,3,4], left pad",
            [options](Generator& g, Dtype dtype) { return std::make_unique<TransformerEncoder>(options, 2, g, dtype); },
            [](Generator& g) { return std::vector<Tensor>{g.normal({2, 3, 4}, Dtype::Float64)}; },
            [](TransformerEncoder& encoder, const std::vector<Var>& x) {
                encoder.train(false);
                return encoder.forward(x[0], fixed_mask({0, 1, 1, 1, 1, 1}, 2, 3, Dtype::Int64), nullptr);
            }});
    }
}

// A tiny model config: d_model 4, 2 heads, feed-forward 6.
ModelConfig tiny_config(const std::string& kind, int64_t num_layers, const std::string& activation, bool norm_first,
                        double dropout, int64_t out_dim) {
    ModelConfig config;
    config.kind = kind;
    config.in_dim = kind == "sig_predictor" ? 3 : 0;
    config.vocab_size = kind == "text_encoder" ? 7 : 0;
    config.max_len = kind == "text_encoder" ? 5 : 0;
    config.d_model = 4;
    config.nhead = 2;
    config.dim_feedforward = 6;
    config.num_layers = num_layers;
    config.dropout = dropout;
    config.activation = activation;
    config.norm_first = norm_first;
    config.out_dim = out_dim;
    return config;
}

// The models read their input as data (a Tensor): only the parameters are checked, so the
// sig_predictor's features are held constant.
void add_model_checks(CheckRegistry& registry) {
    const std::vector<double> mask{0, 0, 1, 1, 1, 0, 1, 0};  // [2, 4]: left padding; a gap and right padding
    for (const ModelConfig& config : {tiny_config("sig_predictor", 2, "gelu", false, 0, 3),
                                      tiny_config("sig_predictor", 1, "relu", true, 0.2, 2)}) {
        add_module_check<SigPredictor>(registry, {"sig_predictor",
            config.dropout > 0 ? "features [2,4,3], pre-norm, dropout on"
                               : "features [2,4,3], 2 post-norm layers",
            [config](Generator& g, Dtype dtype) { return std::make_unique<SigPredictor>(config, g, dtype); },
            [](Generator& g) { return std::vector<Tensor>{g.normal({2, 4, 3}, Dtype::Float64)}; },
            [config, mask](SigPredictor& model, const std::vector<Var>& x) {
                model.train(config.dropout > 0);
                Generator masks(kMaskSeed);
                return model.encode(x[0].value(), fixed_mask(mask, 2, 4, x[0].dtype()), &masks);
            },
            /*constant_data=*/{0}});
    }
    ModelConfig lexical = tiny_config("text_encoder", 1, "gelu", true, 0, 0);
    lexical.lexical_dim = 6;  // the lexical head: max over tokens of log(1 + relu(...))
    ModelConfig terms = tiny_config("text_encoder", 1, "gelu", true, 0, 0);
    terms.term_weights = true;  // the term-weight head
    // Its own mask: each row needs two distinct real pieces (one piece alone normalises to a
    // constant unit vector), and row 0's real tokens repeat piece 3, which sums two weights.
    const std::vector<double> term_mask{0, 1, 1, 1, 1, 1, 1, 0};
    ModelConfig both = terms;  // all three parts: [mean ; max-pooled ; terms]
    both.lexical_dim = 6;
    for (const ModelConfig& config : {tiny_config("text_encoder", 1, "relu", true, 0, 0),
                                      tiny_config("text_encoder", 2, "gelu", false, 0.2, 3), lexical, terms, both}) {
        add_module_check<TextEncoder>(registry, {"text_encoder",
            config.lexical_dim > 0 && config.term_weights ? "ids [2,4], 1 pre-norm layer, lexical head 6 and term weights"
            : config.lexical_dim > 0 ? "ids [2,4], 1 pre-norm layer, lexical head 6"
            : config.term_weights  ? "ids [2,4], 1 pre-norm layer, term weights, a repeat"
            : config.dropout > 0   ? "ids [2,4], 2 layers, out 3, dropout on"
                                   : "ids [2,4], 1 pre-norm layer, no out",
            [config](Generator& g, Dtype dtype) { return std::make_unique<TextEncoder>(config, g, dtype); },
            [](Generator&) { return std::vector<Tensor>{Tensor::from_indices({6, 0, 3, 3, 1, 5, 2, 4}, {2, 4})}; },
            [config, mask = config.term_weights ? term_mask : mask](TextEncoder& model, const std::vector<Var>& x) {
                model.train(config.dropout > 0);
                Generator masks(kMaskSeed);
                return model.encode(x[0].value(), fixed_mask(mask, 2, 4, Dtype::Int64), &masks);
            }});
    }
}

// A tiny bert: vocabulary 7, d_model 4, 2 heads, feed-forward 6, 4 positions of 6 (2 after
// the offset), both token types.
ModelConfig tiny_bert(int64_t num_layers, const std::string& pooling, bool normalize, int64_t position_offset,
                      double dropout) {
    ModelConfig config = tiny_config("bert", num_layers, "gelu", false, dropout, 0);
    config.vocab_size = 7;
    config.max_len = 4;
    config.max_position_embeddings = 6;
    config.type_vocab_size = 2;
    config.position_offset = position_offset;
    config.attention_dropout = dropout;
    config.pooling = pooling;
    config.normalize = normalize;
    config.layer_norm_eps = 1e-12;
    return config;
}

// The whole BertEncoder against finite differences: every parameter (Hugging Face's names),
// each pooling mode, BERT's and RoBERTa's positions, with and without normalisation, dropout
// on in one.
void add_bert_checks(CheckRegistry& registry) {
    const std::vector<double> mask{0, 0, 1, 1, 1, 0, 1, 0};  // [2, 4]: left padding; a gap and right padding
    for (const ModelConfig& config : {tiny_bert(2, "mean", true, 0, 0), tiny_bert(1, "cls", true, 2, 0),
                                      tiny_bert(1, "max", false, 0, 0), tiny_bert(1, "mean_sqrt_len", false, 2, 0),
                                      tiny_bert(1, "mean", true, 0, 0.2)}) {
        // The key bias b_k gets no gradient, exactly: it adds q_i · b_k to every score of row i,
        // and softmax ignores a shift of its row. Its derivative is 0 both ways, where a
        // relative error means nothing, so it is held constant (after the ids, input 0).
        std::vector<int> key_biases;
        Generator probe(0);
        BertEncoder model(config, probe, Dtype::Float64);
        auto parameters = model.named_parameters();
        for (size_t i = 0; i < parameters.size(); ++i)
            if (parameters[i].first.find("attention.self.key.bias") != std::string::npos)
                key_biases.push_back(static_cast<int>(i) + 1);
        add_module_check<BertEncoder>(registry, {"bert",
            fmt::format("ids [2,4], {} layer(s), {} pooling, position offset {}{}{}", config.num_layers,
                        config.pooling, config.position_offset, config.normalize ? ", normalised" : "",
                        config.dropout > 0 ? ", dropout on" : ""),
            [config](Generator& g, Dtype dtype) { return std::make_unique<BertEncoder>(config, g, dtype); },
            [](Generator&) { return std::vector<Tensor>{Tensor::from_indices({6, 0, 3, 3, 1, 5, 2, 4}, {2, 4})}; },
            [config, mask](BertEncoder& model, const std::vector<Var>& x) {
                model.train(config.dropout > 0);
                Generator masks(kMaskSeed);
                return model.encode(x[0].value(), fixed_mask(mask, 2, 4, Dtype::Int64), &masks);
            },
            key_biases});
    }
}

}  // namespace

void register_module_checks(CheckRegistry& registry) {
    add_linear_checks(registry);
    add_embedding_checks(registry);
    add_layer_norm_checks(registry);
    add_dropout_checks(registry);
    add_attention_checks(registry);
    add_encoder_layer_checks(registry);
    add_encoder_checks(registry);
    add_model_checks(registry);
    add_bert_checks(registry);
}

}  // namespace nce::nn
