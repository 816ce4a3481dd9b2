// Model and training checkpoints on top of safetensors (the layout is in checkpoint.h).
#include "nn/checkpoint.h"

#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>
#include <vector>

#include "engine/json_nesting.h"
#include "nn/safetensors.h"

namespace nce::nn {
namespace {

using OrderedJson = nlohmann::ordered_json;

// Metadata keys that nce writes and reads; users' own keys may not start with "nce_".
constexpr const char* kConfigKey = "nce_config";
constexpr const char* kKindKey = "nce_checkpoint";  // "model" or "training"
constexpr const char* kStepKey = "nce_step";
constexpr const char* kEpochKey = "nce_epoch";
constexpr const char* kGeneratorSeedKey = "nce_generator_seed";
constexpr const char* kGeneratorOffsetKey = "nce_generator_offset";
constexpr const char* kBestMetricKey = "nce_best_metric";
constexpr const char* kOptimizerPrefix = "optimizer.";
// The learnable temperature is stored under this name when the model does not register it
// as one of its named parameters.
constexpr const char* kLogTauName = "log_tau";

// ---- the model's tensors by name ----

// Every parameter by its state_dict name, plus log_tau if the model keeps it apart.
std::map<std::string, Var*> parameters_by_name(EmbeddingModel& model) {
    std::map<std::string, Var*> parameters;
    for (auto& [name, parameter] : model.named_parameters()) parameters[name] = parameter;
    if (Var* log_tau = model.log_tau()) {
        bool registered = false;
        for (auto& [name, parameter] : parameters) registered = registered || parameter == log_tau;
        if (!registered) parameters[kLogTauName] = log_tau;
    }
    return parameters;
}

std::map<std::string, Tensor> parameter_tensors(EmbeddingModel& model) {
    std::map<std::string, Tensor> tensors;
    for (auto& [name, parameter] : parameters_by_name(model)) tensors[name] = parameter->value();
    return tensors;
}

// ---- metadata ----

void check_user_keys(const std::map<std::string, std::string>& metadata, const std::string& path, const char* op) {
    for (const auto& [key, value] : metadata)
        NCE_CHECK(key.rfind("nce_", 0) != 0, "{}: '{}': metadata key '{}' is reserved (keys starting with nce_ are "
                  "written by nce); rename it", op, path, key);
}

const std::string& required_metadata(const SafetensorsFile& file, const char* key, const std::string& path,
                                     const char* op) {
    auto found = file.metadata.find(key);
    NCE_CHECK(found != file.metadata.end(), "{}: '{}' has no '{}' in its metadata: {}", op, path, key,
              std::string(key) == kConfigKey
                  ? "it is not an nce checkpoint (docs/checkpoints.md shows how to add the config to a PyTorch one)"
                  : "it is not a complete training checkpoint");
    return found->second;
}

template <typename Integer>
Integer parse_integer(const std::string& text, const char* key, const std::string& path) {
    Integer value{};
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    NCE_CHECK(error == std::errc() && end == text.data() + text.size() && !text.empty(),
              "load_training_checkpoint: '{}': metadata '{}' must be an integer, found \"{}\"", path, key, text);
    return value;
}

double parse_double(const std::string& text, const char* key, const std::string& path) {
    double value = 0;
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    NCE_CHECK(error == std::errc() && end == text.data() + text.size() && !text.empty(),
              "load_training_checkpoint: '{}': metadata '{}' must be a number, found \"{}\"", path, key, text);
    return value;
}

// ---- the config's JSON fields ----

int64_t integer_field(const OrderedJson& json, const char* key, const std::string& source) {
    const OrderedJson& value = json.at(key);
    NCE_CHECK(value.is_number_integer(), "{}: nce_config key '{}' must be an integer, found {}", source, key,
              value.dump());
    return value.get<int64_t>();
}

double number_field(const OrderedJson& json, const char* key, const std::string& source) {
    const OrderedJson& value = json.at(key);
    NCE_CHECK(value.is_number(), "{}: nce_config key '{}' must be a number, found {}", source, key, value.dump());
    return value.get<double>();
}

std::string string_field(const OrderedJson& json, const char* key, const std::string& source) {
    const OrderedJson& value = json.at(key);
    NCE_CHECK(value.is_string(), "{}: nce_config key '{}' must be a string, found {}", source, key, value.dump());
    return value.get<std::string>();
}

bool bool_field(const OrderedJson& json, const char* key, const std::string& source) {
    const OrderedJson& value = json.at(key);
    NCE_CHECK(value.is_boolean(), "{}: nce_config key '{}' must be true or false, found {}", source, key, value.dump());
    return value.get<bool>();
}

// The tensors that are the model's, without a training checkpoint's optimizer state.
std::map<std::string, Tensor> model_tensors(const SafetensorsFile& file, const std::string& path, const char* op) {
    auto kind = file.metadata.find(kKindKey);
    std::string checkpoint_kind = kind == file.metadata.end() ? "model" : kind->second;
    NCE_CHECK(checkpoint_kind == "model" || checkpoint_kind == "training",
              "{}: '{}': metadata '{}' is \"{}\"; expected \"model\" or \"training\"", op, path, kKindKey,
              checkpoint_kind);
    std::map<std::string, Tensor> tensors;
    for (const auto& [name, tensor] : file.tensors)
        if (checkpoint_kind != "training" || name.rfind(kOptimizerPrefix, 0) != 0) tensors[name] = tensor;
    return tensors;
}

// nce_config as the file's tensors complete it: either model may own log_tau, so a file that
// holds one has a learnable temperature whatever the config says (PyTorch writers need not
// add learnable_temperature to the keys the contract requires).
ModelConfig checkpoint_config(const SafetensorsFile& file, const std::map<std::string, Tensor>& tensors,
                              const std::string& path, const char* op) {
    ModelConfig config =
        config_from_json(required_metadata(file, kConfigKey, path, op), fmt::format("{}: '{}'", op, path));
    if (tensors.count(kLogTauName)) config.learnable_temperature = true;
    return config;
}

// Builds the model `config` describes, once the file is known to hold its parameters: the
// config is checked against its limits and the parameter count against the values the file
// holds before anything is allocated, so a small file cannot ask for gigabytes.
std::unique_ptr<EmbeddingModel> build_model(const ModelConfig& config, const std::map<std::string, Tensor>& tensors,
                                            const std::string& path, Dtype compute_dtype, const char* op) {
    NCE_CHECK(is_floating(compute_dtype), "{}: '{}': the compute dtype must be float32 or float64, not {}", op, path,
              dtype_name(compute_dtype));
    std::map<std::string, Shape> shapes;
    int64_t needed = 0;
    try {
        shapes = parameter_shapes(config);
        needed = parameter_count(config);
    } catch (const Error& error) {
        fail("{}: '{}': nce_config does not describe a valid model: {}", op, path, error.what());
    }
    uint64_t held = 0, held_bytes = 0;
    for (const auto& [name, tensor] : tensors) {
        held += static_cast<uint64_t>(tensor.numel());
        held_bytes += tensor.nbytes();
    }
    if (static_cast<uint64_t>(needed) > held) {
        // Name the first parameter the file lacks, for the common case of one tensor left out.
        std::string first_gap;
        for (const auto& [name, shape] : shapes) {
            auto found = tensors.find(name);
            if (found == tensors.end() || found->second.shape() != shape) {
                first_gap = fmt::format("; parameter '{}' {} is {}", name, shape_string(shape),
                                        found == tensors.end() ? "missing from the file"
                                                               : "stored as " + shape_string(found->second.shape()));
                break;
            }
        }
        fail("{}: '{}': nce_config describes a {} of {} parameters but the file's tensors hold {} values ({} bytes){}",
             op, path, config.kind, needed, held, held_bytes, first_gap);
    }
    Generator unused_initialisation(0);  // every parameter is overwritten from the file
    try {
        return make_model(config, unused_initialisation, compute_dtype);
    } catch (const Error& error) {
        fail("{}: '{}': nce_config does not describe a valid model: {}", op, path, error.what());
    }
}

TrainingState read_training_state(const SafetensorsFile& file, const std::string& path) {
    const char* op = "load_training_checkpoint";
    auto kind = file.metadata.find(kKindKey);
    NCE_CHECK(kind != file.metadata.end() && kind->second == "training",
              "{}: '{}' is a model checkpoint, not a training checkpoint (it has no optimizer state or step); "
              "load it with load_model",
              op, path);
    TrainingState state;
    state.step = parse_integer<int64_t>(required_metadata(file, kStepKey, path, op), kStepKey, path);
    state.epoch = parse_integer<int64_t>(required_metadata(file, kEpochKey, path, op), kEpochKey, path);
    state.generator_seed =
        parse_integer<uint64_t>(required_metadata(file, kGeneratorSeedKey, path, op), kGeneratorSeedKey, path);
    state.generator_offset =
        parse_integer<uint64_t>(required_metadata(file, kGeneratorOffsetKey, path, op), kGeneratorOffsetKey, path);
    if (auto best = file.metadata.find(kBestMetricKey); best != file.metadata.end())
        state.best_metric = parse_double(best->second, kBestMetricKey, path);
    for (const auto& [key, value] : file.metadata)
        if (key.rfind("nce_", 0) != 0) state.metadata[key] = value;
    const std::string prefix = kOptimizerPrefix;
    for (const auto& [name, tensor] : file.tensors)
        if (name.rfind(prefix, 0) == 0) state.optimizer_state[name.substr(prefix.size())] = tensor;
    return state;
}

}  // namespace

// ---- the configuration as JSON ----

std::string config_to_json(const ModelConfig& config) {
    OrderedJson json = {
        {"kind", config.kind},
        {"in_dim", config.in_dim},
        {"vocab_size", config.vocab_size},
        {"max_len", config.max_len},
        {"d_model", config.d_model},
        {"nhead", config.nhead},
        {"dim_feedforward", config.dim_feedforward},
        {"num_layers", config.num_layers},
        {"dropout", config.dropout},
        {"activation", config.activation},
        {"norm_first", config.norm_first},
        {"layer_norm_eps", config.layer_norm_eps},
        {"out_dim", config.out_dim},
        {"learnable_temperature", config.learnable_temperature},
        {"min_temperature", config.min_temperature},
        {"max_temperature", config.max_temperature},
        {"query_prompt", config.query_prompt},
        {"passage_prompt", config.passage_prompt},
    };
    // Written only when there is a lexical head, so a model without one is stored as before.
    if (config.lexical_dim > 0) json["lexical_dim"] = config.lexical_dim;
    if (config.term_weights) json["term_weights"] = true;
    if (config.kind == "bert") {  // and the bert-only fields only for a bert
        json["max_position_embeddings"] = config.max_position_embeddings;
        json["type_vocab_size"] = config.type_vocab_size;
        json["position_offset"] = config.position_offset;
        json["attention_dropout"] = config.attention_dropout;
        json["pooling"] = config.pooling;
        json["normalize"] = config.normalize;
        // Only where it says more than the position scheme (xlm-roberta), so others are stored as before.
        const std::string implied = config.position_offset > 0 ? "roberta" : "bert";
        if (!config.hugging_face_type.empty() && config.hugging_face_type != implied)
            json["hugging_face_type"] = config.hugging_face_type;
    }
    return json.dump();
}

ModelConfig config_from_json(const std::string& text, const std::string& source) {
    check_json_nesting(text, source + ": nce_config");
    OrderedJson json;
    try {
        json = OrderedJson::parse(text);
    } catch (const OrderedJson::exception& error) {
        std::string message = error.what();
        std::size_t close = message.find("] ");
        fail("{}: nce_config is not valid JSON: {}", source, close == std::string::npos ? message : message.substr(close + 2));
    }
    NCE_CHECK(json.is_object(), "{}: nce_config must be a JSON object, found {}", source, json.type_name());
    static const std::vector<std::string> required = {"kind",       "in_dim",          "vocab_size", "max_len",
                                                      "d_model",    "nhead",           "dim_feedforward",
                                                      "num_layers", "dropout",         "activation", "norm_first",
                                                      "layer_norm_eps", "out_dim"};
    static const std::vector<std::string> optional = {"learnable_temperature", "min_temperature", "max_temperature",
                                                      "query_prompt", "passage_prompt", "lexical_dim",
                                                      "term_weights", "max_position_embeddings", "type_vocab_size",
                                                      "position_offset", "attention_dropout", "pooling", "normalize",
                                                      "hugging_face_type"};
    for (const std::string& key : required)
        NCE_CHECK(json.contains(key), "{}: nce_config has no '{}' (it needs: {})", source, key,
                  fmt::join(required, ", "));
    for (const auto& [key, value] : json.items())
        NCE_CHECK(std::find(required.begin(), required.end(), key) != required.end() ||
                      std::find(optional.begin(), optional.end(), key) != optional.end(),
                  "{}: nce_config has an unknown key '{}'", source, key);

    ModelConfig config;
    config.kind = string_field(json, "kind", source);
    config.in_dim = integer_field(json, "in_dim", source);
    config.vocab_size = integer_field(json, "vocab_size", source);
    config.max_len = integer_field(json, "max_len", source);
    config.d_model = integer_field(json, "d_model", source);
    config.nhead = integer_field(json, "nhead", source);
    config.dim_feedforward = integer_field(json, "dim_feedforward", source);
    config.num_layers = integer_field(json, "num_layers", source);
    config.dropout = number_field(json, "dropout", source);
    config.activation = string_field(json, "activation", source);
    config.norm_first = bool_field(json, "norm_first", source);
    config.layer_norm_eps = number_field(json, "layer_norm_eps", source);
    config.out_dim = integer_field(json, "out_dim", source);
    if (json.contains("lexical_dim")) config.lexical_dim = integer_field(json, "lexical_dim", source);
    if (json.contains("term_weights")) config.term_weights = bool_field(json, "term_weights", source);
    // A bert's own fields (nn/model.h); a bert config needs them all.
    static const std::vector<std::string> bert_keys = {"max_position_embeddings", "type_vocab_size", "position_offset",
                                                       "attention_dropout", "pooling", "normalize"};
    for (const std::string& key : bert_keys) {
        NCE_CHECK(config.kind != "bert" || json.contains(key), "{}: nce_config of a bert has no '{}' (it needs: {})",
                  source, key, fmt::join(bert_keys, ", "));
        NCE_CHECK(config.kind == "bert" || !json.contains(key), "{}: nce_config key '{}' is a bert's, not a {}'s",
                  source, key, config.kind);
    }
    NCE_CHECK(config.kind == "bert" || !json.contains("hugging_face_type"),
              "{}: nce_config key 'hugging_face_type' is a bert's, not a {}'s", source, config.kind);
    if (config.kind == "bert") {
        config.max_position_embeddings = integer_field(json, "max_position_embeddings", source);
        config.type_vocab_size = integer_field(json, "type_vocab_size", source);
        config.position_offset = integer_field(json, "position_offset", source);
        config.attention_dropout = number_field(json, "attention_dropout", source);
        config.pooling = string_field(json, "pooling", source);
        config.normalize = bool_field(json, "normalize", source);
        if (json.contains("hugging_face_type")) {
            config.hugging_face_type = string_field(json, "hugging_face_type", source);
            NCE_CHECK(config.hugging_face_type == "xlm-roberta" && config.position_offset > 0,
                      "{}: nce_config's hugging_face_type is \"{}\"; only \"xlm-roberta\" (with a position_offset) "
                      "is stored", source, config.hugging_face_type);
        }
    }
    if (json.contains("learnable_temperature"))
        config.learnable_temperature = bool_field(json, "learnable_temperature", source);
    if (json.contains("min_temperature")) config.min_temperature = number_field(json, "min_temperature", source);
    if (json.contains("max_temperature")) config.max_temperature = number_field(json, "max_temperature", source);
    // The prompts are optional too: a checkpoint written before them has none.
    for (auto [key, prompt] : {std::pair<const char*, std::string*>{"query_prompt", &config.query_prompt},
                               {"passage_prompt", &config.passage_prompt}}) {
        if (!json.contains(key)) continue;
        *prompt = string_field(json, key, source);
        NCE_CHECK(prompt->size() <= ModelConfig::kMaxPromptBytes,
                  "{}: nce_config key '{}' has {} bytes; a prompt may have at most {}", source, key, prompt->size(),
                  ModelConfig::kMaxPromptBytes);
    }
    return config;
}

// ---- model checkpoints ----

void save_model(const std::string& path, EmbeddingModel& model, const std::map<std::string, std::string>& extra_metadata) {
    check_user_keys(extra_metadata, path, "save_model");
    std::map<std::string, std::string> metadata = extra_metadata;
    metadata[kConfigKey] = config_to_json(model.config());
    metadata[kKindKey] = "model";
    write_safetensors(path, parameter_tensors(model), metadata);
}

std::unique_ptr<EmbeddingModel> load_model(const std::string& path, Dtype compute_dtype) {
    const char* op = "load_model";
    SafetensorsFile file = read_safetensors(path);
    std::map<std::string, Tensor> tensors = model_tensors(file, path, op);
    std::unique_ptr<EmbeddingModel> model =
        build_model(checkpoint_config(file, tensors, path, op), tensors, path, compute_dtype, op);
    load_parameters(*model, tensors, path);
    return model;
}

void load_parameters(EmbeddingModel& model, const std::map<std::string, Tensor>& tensors, const std::string& source) {
    std::map<std::string, Var*> parameters = parameters_by_name(model);
    const std::string& kind = model.config().kind;
    for (const auto& [name, tensor] : tensors)
        NCE_CHECK(parameters.count(name), "checkpoint '{}': tensor '{}' {} is not a parameter of the {} model", source,
                  name, shape_string(tensor.shape()), kind);
    for (auto& [name, parameter] : parameters) {
        auto found = tensors.find(name);
        NCE_CHECK(found != tensors.end(), "checkpoint '{}': the {} model's parameter '{}' {} is missing from the file",
                  source, kind, name, shape_string(parameter->shape()));
        const Tensor& stored = found->second;
        NCE_CHECK(stored.shape() == parameter->shape(),
                  "checkpoint '{}': parameter '{}' is {} in the file but {} in the {} model", source, name,
                  shape_string(stored.shape()), shape_string(parameter->shape()), kind);
        NCE_CHECK(is_floating(stored.dtype()), "checkpoint '{}': parameter '{}' is stored as {}; it must be F32 or F64",
                  source, name, dtype_name(stored.dtype()));
        Tensor value = stored.to(parameter->dtype()).to(parameter->value().device());
        if (value.same_storage(stored)) value = value.clone();  // the model owns its parameters
        parameter->set_value(std::move(value));
    }
}

// ---- training checkpoints ----

void save_training_checkpoint(const std::string& path, EmbeddingModel& model, const TrainingState& state) {
    const char* op = "save_training_checkpoint";
    check_user_keys(state.metadata, path, op);
    std::map<std::string, Tensor> tensors = parameter_tensors(model);
    for (const auto& [name, tensor] : state.optimizer_state) {
        NCE_CHECK(!name.empty(), "{}: '{}': an optimizer tensor has an empty name", op, path);
        tensors[kOptimizerPrefix + name] = tensor;
    }
    std::map<std::string, std::string> metadata = state.metadata;
    metadata[kConfigKey] = config_to_json(model.config());
    metadata[kKindKey] = "training";
    metadata[kStepKey] = std::to_string(state.step);
    metadata[kEpochKey] = std::to_string(state.epoch);
    metadata[kGeneratorSeedKey] = std::to_string(state.generator_seed);
    metadata[kGeneratorOffsetKey] = std::to_string(state.generator_offset);
    if (state.best_metric) metadata[kBestMetricKey] = fmt::format("{:.17g}", *state.best_metric);
    write_safetensors(path, tensors, metadata);
}

TrainingCheckpoint load_training_checkpoint(const std::string& path, Dtype compute_dtype) {
    const char* op = "load_training_checkpoint";
    SafetensorsFile file = read_safetensors(path);
    TrainingCheckpoint checkpoint;
    checkpoint.state = read_training_state(file, path);
    std::map<std::string, Tensor> tensors = model_tensors(file, path, op);
    checkpoint.model = build_model(checkpoint_config(file, tensors, path, op), tensors, path, compute_dtype, op);
    load_parameters(*checkpoint.model, tensors, path);
    return checkpoint;
}

TrainingState restore_training_checkpoint(const std::string& path, EmbeddingModel& model) {
    const char* op = "restore_training_checkpoint";
    SafetensorsFile file = read_safetensors(path);
    TrainingState state = read_training_state(file, path);
    std::map<std::string, Tensor> tensors = model_tensors(file, path, op);
    OrderedJson saved = OrderedJson::parse(config_to_json(checkpoint_config(file, tensors, path, op)));
    OrderedJson current = OrderedJson::parse(config_to_json(model.config()));
    for (const auto& [key, value] : current.items())
        NCE_CHECK(saved[key] == value, "{}: '{}': the checkpoint's model has {} = {}, this model has {}; build the model "
                  "from the checkpoint's config", op, path, key, saved[key].dump(), value.dump());
    load_parameters(model, tensors, path);
    return state;
}

}  // namespace nce::nn
