// Reading and writing sentence-transformers folders (the layout is in the header).
#include "nn/sentence_transformers_folder.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>

#include "engine/json_nesting.h"
#include "nn/checkpoint.h"
#include "nn/safetensors.h"

namespace nce::nn {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

// The tokenizer files a folder may hold; they are copied as they are when writing.
const std::vector<std::string> kTokenizerFiles = {"tokenizer.json",          "tokenizer_config.json",
                                                  "special_tokens_map.json", "vocab.txt",
                                                  "added_tokens.json",       "sentencepiece.bpe.model",
                                                  "spiece.model",            "vocab.json",
                                                  "merges.txt"};

// ---- reading JSON files ----

Json read_json_file(const fs::path& path, const std::string& what) {
    std::error_code error;
    NCE_CHECK(fs::is_regular_file(path, error), "sentence-transformers folder: '{}' is missing; {}", path.string(),
              what);
    std::ifstream in(path, std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    check_json_nesting(text, path.string());
    try {
        return Json::parse(text);
    } catch (const Json::exception& exception) {
        std::string message = exception.what();
        std::size_t close = message.find("] ");
        fail("sentence-transformers folder: '{}' is not valid JSON: {}", path.string(),
             close == std::string::npos ? message : message.substr(close + 2));
    }
}

// A JSON file's key, checked for its type; `file` names it in messages.
int64_t integer_key(const Json& json, const char* key, const fs::path& file) {
    NCE_CHECK(json.contains(key), "'{}' has no \"{}\"; add it", file.string(), key);
    NCE_CHECK(json[key].is_number_integer(), "'{}': \"{}\" must be an integer, found {}", file.string(), key,
              json[key].dump());
    return json[key].get<int64_t>();
}

double number_key(const Json& json, const char* key, const fs::path& file, double fallback) {
    if (!json.contains(key) || json[key].is_null()) return fallback;
    NCE_CHECK(json[key].is_number(), "'{}': \"{}\" must be a number, found {}", file.string(), key, json[key].dump());
    return json[key].get<double>();
}

bool bool_key(const Json& json, const char* key, const fs::path& file, bool fallback) {
    if (!json.contains(key) || json[key].is_null()) return fallback;
    NCE_CHECK(json[key].is_boolean(), "'{}': \"{}\" must be true or false, found {}", file.string(), key,
              json[key].dump());
    return json[key].get<bool>();
}

std::string string_key(const Json& json, const char* key, const fs::path& file, const std::string& fallback) {
    if (!json.contains(key) || json[key].is_null()) return fallback;
    NCE_CHECK(json[key].is_string(), "'{}': \"{}\" must be a string, found {}", file.string(), key, json[key].dump());
    return json[key].get<std::string>();
}

// Every key must be one of `used` or `harmless`; anything else is named.
void check_keys(const Json& json, const fs::path& file, const std::set<std::string>& used,
                const std::set<std::string>& harmless) {
    NCE_CHECK(json.is_object(), "'{}' must hold a JSON object, found a {}", file.string(), json.type_name());
    for (const auto& [key, value] : json.items())
        NCE_CHECK(used.count(key) || harmless.count(key),
                  "'{}': key \"{}\" is not one nce implements (nce reads: {}); remove it if the model does not "
                  "need it, or use a model without it",
                  file.string(), key, fmt::join(used, ", "));
}

// ---- config.json ----

// Keys that change nothing nce computes: a record of where the model came from, the
// initialisation of weights that are loaded anyway, training-memory switches, heads and
// decoding settings a bare encoder does not have.
const std::set<std::string> kHarmlessConfigKeys = {
    "_name_or_path", "transformers_version", "initializer_range", "gradient_checkpointing", "use_cache",
    "classifier_dropout", "bos_token_id", "eos_token_id", "output_past", "tokenizer_class", "id2label",
    "label2id", "torch_dtype", "dtype", "return_dict", "output_hidden_states", "output_attentions",
    "finetuning_task", "problem_type", "sep_token_id", "cls_token_id", "directionality", "pooler_fc_size",
    "pooler_num_attention_heads", "pooler_num_fc_layers", "pooler_size_per_head", "pooler_type", "layer_norm_type",
    "tie_word_embeddings"};  // ties an output head's weights to the word embeddings; an encoder has none
const std::set<std::string> kUsedConfigKeys = {
    "architectures", "model_type", "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
    "intermediate_size", "hidden_act", "hidden_dropout_prob", "attention_probs_dropout_prob",
    "max_position_embeddings", "type_vocab_size", "layer_norm_eps", "pad_token_id", "position_embedding_type",
    "is_decoder", "add_cross_attention", "chunk_size_feed_forward"};

// The model half of the config, from config.json.
ModelConfig read_model_config(const fs::path& file) {
    Json json = read_json_file(file, "a model folder needs the Hugging Face config.json beside model.safetensors");
    check_keys(json, file, kUsedConfigKeys, kHarmlessConfigKeys);
    const std::string model_type = string_key(json, "model_type", file, "");
    NCE_CHECK(model_type == "bert" || model_type == "roberta" || model_type == "xlm-roberta",
              "'{}': model_type \"{}\" is not an architecture nce implements; nce reads bert, roberta and xlm-roberta",
              file.string(), model_type);
    if (json.contains("architectures") && !json["architectures"].is_null()) {
        NCE_CHECK(json["architectures"].is_array(), "'{}': \"architectures\" must be a list", file.string());
        for (const Json& name : json["architectures"])
            NCE_CHECK(name == "BertModel" || name == "RobertaModel" || name == "XLMRobertaModel",
                      "'{}': architecture {} is not one nce implements; nce reads the bare encoders BertModel, "
                      "RobertaModel and XLMRobertaModel (save the encoder alone, model.bert or model.roberta)",
                      file.string(), name.dump());
    }
    const std::string position_type = string_key(json, "position_embedding_type", file, "absolute");
    NCE_CHECK(position_type == "absolute",
              "'{}': position_embedding_type \"{}\" is not implemented; nce implements \"absolute\"", file.string(),
              position_type);
    NCE_CHECK(!bool_key(json, "is_decoder", file, false) && !bool_key(json, "add_cross_attention", file, false),
              "'{}': is_decoder / add_cross_attention describe a decoder, which nce does not implement", file.string());
    NCE_CHECK(!json.contains("chunk_size_feed_forward") || integer_key(json, "chunk_size_feed_forward", file) == 0,
              "'{}': chunk_size_feed_forward is not implemented (nce computes the feed-forward in one piece); set it "
              "to 0",
              file.string());

    ModelConfig config;
    config.kind = "bert";
    config.vocab_size = integer_key(json, "vocab_size", file);
    config.d_model = integer_key(json, "hidden_size", file);
    config.num_layers = integer_key(json, "num_hidden_layers", file);
    config.nhead = integer_key(json, "num_attention_heads", file);
    config.dim_feedforward = integer_key(json, "intermediate_size", file);
    config.max_position_embeddings = integer_key(json, "max_position_embeddings", file);
    config.type_vocab_size = json.contains("type_vocab_size") ? integer_key(json, "type_vocab_size", file) : 2;
    config.layer_norm_eps = number_key(json, "layer_norm_eps", file, 1e-12);
    config.dropout = number_key(json, "hidden_dropout_prob", file, 0.1);
    config.attention_dropout = number_key(json, "attention_probs_dropout_prob", file, 0.1);
    const std::string act = string_key(json, "hidden_act", file, "gelu");
    NCE_CHECK(act == "gelu" || act == "relu",
              "'{}': hidden_act \"{}\" is not implemented; nce implements \"gelu\" (the erf form) and \"relu\"",
              file.string(), act);
    config.activation = act;
    if (model_type != "bert") {
        // RoBERTa's positions start after padding_idx = pad_token_id (bert_encoder.h).
        NCE_CHECK(json.contains("pad_token_id"), "'{}': a {} needs pad_token_id (its positions start after it)",
                  file.string(), model_type);
        config.position_offset = integer_key(json, "pad_token_id", file) + 1;
    }
    config.max_len = config.max_position_embeddings - config.position_offset;
    config.hugging_face_type = model_type;
    return config;
}

// ---- the sentence-transformers files ----

// The longest input, as sentence-transformers takes it: sentence_bert_config.json's
// max_seq_length, else the tokenizer's model_max_length (tokenizer_config.json, what
// sentence-transformers 6 writes), else every position; at most the positions there are.
void read_max_length(const fs::path& transformer, ModelConfig& config) {
    const int64_t positions = config.max_len;  // max_position_embeddings - position_offset
    std::error_code error;
    const fs::path sbert = transformer / "sentence_bert_config.json";
    const fs::path tokenizer = transformer / "tokenizer_config.json";
    if (fs::exists(sbert, error)) {
        Json json = read_json_file(sbert, "");
        check_keys(json, sbert,
                   {"max_seq_length", "do_lower_case", "transformer_task", "modality_config", "module_output_name"}, {});
        NCE_CHECK(!bool_key(json, "do_lower_case", sbert, false),
                  "'{}': do_lower_case true (sentence-transformers lowercases the text before the tokenizer) is not "
                  "implemented; nce's tokenizers lowercase where tokenizer.json says so",
                  sbert.string());
        // sentence-transformers 6's description of the Transformer module: text in, token states out.
        NCE_CHECK(string_key(json, "transformer_task", sbert, "feature-extraction") == "feature-extraction",
                  "'{}': transformer_task {} is not implemented; nce implements \"feature-extraction\"", sbert.string(),
                  json["transformer_task"].dump());
        NCE_CHECK(string_key(json, "module_output_name", sbert, "token_embeddings") == "token_embeddings",
                  "'{}': module_output_name {} is not implemented; nce's Transformer gives \"token_embeddings\"",
                  sbert.string(), json["module_output_name"].dump());
        const Json text_only = {{"text", {{"method", "forward"}, {"method_output_name", "last_hidden_state"}}}};
        NCE_CHECK(!json.contains("modality_config") || json["modality_config"] == text_only,
                  "'{}': modality_config {} is not implemented; nce reads text through the encoder's last hidden state "
                  "({})",
                  sbert.string(), json["modality_config"].dump(), text_only.dump());
        if (json.contains("max_seq_length") && !json["max_seq_length"].is_null()) {
            int64_t length = integer_key(json, "max_seq_length", sbert);
            NCE_CHECK(length >= 1 && length <= positions,
                      "'{}': max_seq_length {} must be in [1, {}] (config.json's max_position_embeddings {} less the "
                      "position offset {})",
                      sbert.string(), length, positions, config.max_position_embeddings, config.position_offset);
            config.max_len = length;
            return;
        }
    }
    if (fs::exists(tokenizer, error)) {
        Json json = read_json_file(tokenizer, "");
        NCE_CHECK(json.is_object(), "'{}' must hold a JSON object", tokenizer.string());
        // Tokenizers without a limit store a huge number (int(1e30)), sometimes as a float.
        if (json.contains("model_max_length") && json["model_max_length"].is_number()) {
            const double limit = json["model_max_length"].get<double>();
            if (limit >= 1) config.max_len = limit >= static_cast<double>(positions) ? positions : static_cast<int64_t>(limit);
        }
    }
}

// 1_Pooling/config.json: exactly one of the modes nce implements, in either
// sentence-transformers' older form (pooling_mode_mean_tokens: true, ...) or 6's
// (pooling_mode: "mean").
void read_pooling_config(const fs::path& file, ModelConfig& config) {
    Json json = read_json_file(file, "modules.json names a Pooling module; its config.json says the pooling mode");
    check_keys(json, file,
               {"word_embedding_dimension", "embedding_dimension", "pooling_mode", "pooling_mode_cls_token",
                "pooling_mode_mean_tokens", "pooling_mode_max_tokens", "pooling_mode_mean_sqrt_len_tokens",
                "pooling_mode_weightedmean_tokens", "pooling_mode_lasttoken", "include_prompt"},
               {});
    const char* width_key = json.contains("embedding_dimension") ? "embedding_dimension" : "word_embedding_dimension";
    NCE_CHECK(integer_key(json, width_key, file) == config.d_model,
              "'{}': {} {} is not config.json's hidden_size {}; the two files describe different models",
              file.string(), width_key, json[width_key].dump(), config.d_model);
    NCE_CHECK(bool_key(json, "include_prompt", file, true),
              "'{}': include_prompt false (the prompt's tokens left out of the pooling) is not implemented",
              file.string());
    // Every mode that is on, under sentence-transformers 6's names.
    std::vector<std::string> modes;
    if (json.contains("pooling_mode")) {
        const Json& mode = json["pooling_mode"];
        NCE_CHECK(mode.is_string() || mode.is_array(), "'{}': pooling_mode must be a name or a list of names",
                  file.string());
        for (const Json& name : mode.is_string() ? Json::array({mode}) : mode) {
            NCE_CHECK(name.is_string(), "'{}': pooling_mode must be a name or a list of names", file.string());
            modes.push_back(name.get<std::string>());
        }
    }
    for (auto [key, mode] : {std::pair{"pooling_mode_mean_tokens", "mean"}, {"pooling_mode_cls_token", "cls"},
                             {"pooling_mode_max_tokens", "max"}, {"pooling_mode_mean_sqrt_len_tokens", "mean_sqrt_len_tokens"},
                             {"pooling_mode_weightedmean_tokens", "weightedmean"}, {"pooling_mode_lasttoken", "lasttoken"}})
        if (bool_key(json, key, file, false)) modes.push_back(mode);
    NCE_CHECK(modes.size() == 1,
              "'{}': {} pooling modes are on ({}); nce implements exactly one of mean, cls, max and mean_sqrt_len_tokens",
              file.string(), modes.size(), fmt::join(modes, ", "));
    const std::string& mode = modes[0];
    NCE_CHECK(mode == "mean" || mode == "cls" || mode == "max" || mode == "mean_sqrt_len_tokens",
              "'{}': pooling mode {} is not one nce implements (mean, cls, max, mean_sqrt_len_tokens)", file.string(),
              mode);
    config.pooling = mode == "mean_sqrt_len_tokens" ? "mean_sqrt_len" : mode;
}

// config_sentence_transformers.json: the prompts named query and document (or passage).
void read_prompts(const fs::path& file, ModelConfig& config, std::vector<std::string>& notes) {
    std::error_code error;
    if (!fs::exists(file, error)) return;
    Json json = read_json_file(file, "");
    check_keys(json, file, {"prompts", "default_prompt_name", "similarity_fn_name"}, {"__version__", "model_type"});
    NCE_CHECK(!json.contains("default_prompt_name") || json["default_prompt_name"].is_null(),
              "'{}': default_prompt_name (a prompt written before every text) is not implemented; set it to null and "
              "give nce the prompt as query_prompt",
              file.string());
    const std::string similarity = string_key(json, "similarity_fn_name", file, "cosine");
    if (similarity != "cosine")
        notes.push_back(fmt::format("{}: similarity_fn_name \"{}\": nce scores by the dot product of the embeddings",
                                    file.string(), similarity));
    if (!json.contains("prompts")) return;
    NCE_CHECK(json["prompts"].is_object(), "'{}': \"prompts\" must be an object of strings", file.string());
    for (const auto& [name, prompt] : json["prompts"].items()) {
        NCE_CHECK(prompt.is_string(), "'{}': prompt \"{}\" must be a string", file.string(), name);
        if (prompt.get<std::string>().empty()) continue;
        if (name == "query")
            config.query_prompt = prompt.get<std::string>();
        else if (name == "document" || name == "passage")
            config.passage_prompt = prompt.get<std::string>();
        else
            notes.push_back(fmt::format("{}: prompt \"{}\" is neither query nor document: not used", file.string(), name));
    }
}

// modules.json's pipeline: where the Transformer's files and the pooling config are.
struct Pipeline {
    fs::path transformer;  // config.json, model.safetensors, sentence_bert_config.json, the tokenizer
    fs::path pooling;      // its config.json
    bool normalize = false;
};

// modules.json: Transformer first, then Pooling, then optionally Normalize.
Pipeline read_modules(const fs::path& folder) {
    const fs::path file = folder / "modules.json";
    Json modules = read_json_file(file, "");
    NCE_CHECK(modules.is_array() && !modules.empty(), "'{}' must be a non-empty list of modules", file.string());
    std::vector<std::string> kinds;
    std::vector<fs::path> paths;
    for (const Json& module : modules) {
        NCE_CHECK(module.is_object() && module.contains("type") && module["type"].is_string(),
                  "'{}': every module needs a \"type\"", file.string());
        std::string type = module["type"].get<std::string>();
        std::string kind = type.substr(type.rfind('.') == std::string::npos ? 0 : type.rfind('.') + 1);
        NCE_CHECK(kind == "Transformer" || kind == "Pooling" || kind == "Normalize",
                  "'{}': module type \"{}\" is not one nce implements (Transformer, Pooling, Normalize)",
                  file.string(), type);
        kinds.push_back(kind);
        // A module lives inside the folder: an absolute path or one through ".." would make
        // the folder read files elsewhere (symlinks inside it are followed, as Hugging Face's
        // cache layout needs).
        const fs::path path(string_key(module, "path", file, ""));
        const bool climbs = std::any_of(path.begin(), path.end(), [](const fs::path& part) { return part == ".."; });
        NCE_CHECK(!path.has_root_path() && !climbs,
                  "'{}': the {} module's path \"{}\" leads outside the model folder; a module's path must be a "
                  "folder inside it, e.g. \"1_Pooling\"",
                  file.string(), kind, path.string());
        paths.push_back(folder / path);
    }
    NCE_CHECK(kinds.size() >= 2 && kinds[0] == "Transformer" && kinds[1] == "Pooling" &&
                  (kinds.size() == 2 || (kinds.size() == 3 && kinds[2] == "Normalize")),
              "'{}': the modules are {}; nce implements Transformer, Pooling and optionally Normalize, in that order",
              file.string(), fmt::join(kinds, ", "));
    return Pipeline{paths[0], paths[1], kinds.size() == 3};
}

// The tokenizer's vocabulary must fit the embedding table: an id past it would be no row.
void check_vocabulary(const fs::path& folder, int64_t vocab_size) {
    std::error_code error;
    const fs::path json_file = folder / "tokenizer.json", vocab_file = folder / "vocab.txt";
    bool found = false;
    if (fs::exists(json_file, error)) {
        found = true;
        Json tokenizer = read_json_file(json_file, "");
        int64_t largest = -1;
        if (tokenizer.contains("model") && tokenizer["model"].contains("vocab")) {
            const Json& vocab = tokenizer["model"]["vocab"];
            if (vocab.is_object()) {
                for (const auto& [piece, id] : vocab.items())
                    if (id.is_number_integer()) largest = std::max(largest, id.get<int64_t>());
            } else if (vocab.is_array()) {
                largest = static_cast<int64_t>(vocab.size()) - 1;
            }
        }
        if (tokenizer.contains("added_tokens") && tokenizer["added_tokens"].is_array())
            for (const Json& token : tokenizer["added_tokens"])
                if (token.contains("id") && token["id"].is_number_integer())
                    largest = std::max(largest, token["id"].get<int64_t>());
        NCE_CHECK(largest < vocab_size,
                  "'{}': the tokenizer gives ids up to {} but the model's vocab_size (config.json, the rows of "
                  "word_embeddings) is {}; the tokenizer belongs to another model",
                  json_file.string(), largest, vocab_size);
    }
    if (fs::exists(vocab_file, error)) {
        found = true;
        std::ifstream in(vocab_file);
        int64_t lines = 0;
        for (std::string line; std::getline(in, line);) ++lines;
        NCE_CHECK(lines <= vocab_size,
                  "'{}' has {} pieces but the model's vocab_size (config.json, the rows of word_embeddings) is {}; "
                  "the vocabulary belongs to another model",
                  vocab_file.string(), lines, vocab_size);
    }
    for (const char* other : {"sentencepiece.bpe.model", "spiece.model", "vocab.json"})
        found = found || fs::exists(folder / other, error);
    NCE_CHECK(found, "sentence-transformers folder: '{}' has no tokenizer (tokenizer.json or vocab.txt); copy the "
              "model's tokenizer files into it",
              folder.string());
}

// The tensors model.safetensors may hold beyond the parameters: BertModel's pooler and its
// position_ids buffer. Neither enters the embedding.
bool is_unused_tensor(const std::string& name) {
    return name.rfind("pooler.", 0) == 0 || name == "embeddings.position_ids";
}

// The header's tensors against the config's parameters: the same names and shapes.
void check_tensors(const fs::path& file, const ModelConfig& config, std::vector<std::string>& notes) {
    std::error_code error;
    NCE_CHECK(fs::is_regular_file(file, error),
              "sentence-transformers folder: '{}' is missing; nce reads the weights from model.safetensors (convert a "
              "pytorch_model.bin with the safetensors package)",
              file.string());
    SafetensorsHeader header = read_safetensors_header(file.string());
    const std::map<std::string, Shape> expected = parameter_shapes(config);
    for (const auto& [name, shape] : expected) {
        if (name == "log_tau") continue;
        auto found = header.tensors.find(name);
        NCE_CHECK(found != header.tensors.end(), "'{}' has no tensor '{}' {}, which config.json's model needs",
                  file.string(), name, shape_string(shape));
        NCE_CHECK(found->second.shape == shape,
                  "'{}': tensor '{}' is {} but config.json describes {}; config.json and the weights disagree",
                  file.string(), name, shape_string(found->second.shape), shape_string(shape));
        NCE_CHECK(is_floating(found->second.dtype), "'{}': tensor '{}' is {}; it must be F32 or F64", file.string(),
                  name, dtype_name(found->second.dtype));
    }
    std::vector<std::string> unused;
    for (const auto& [name, info] : header.tensors) {
        if (expected.count(name)) continue;
        NCE_CHECK(is_unused_tensor(name),
                  "'{}': tensor '{}' {} is not part of the encoder config.json describes (a head or another "
                  "architecture?)",
                  file.string(), name, shape_string(info.shape));
        unused.push_back(name);
    }
    if (!unused.empty())
        notes.push_back(fmt::format("{}: {} not used by the embedding (sentence-transformers reads the token "
                                    "states): not loaded", file.string(), fmt::join(unused, ", ")));
}

// The config and the folder the Transformer's files are in.
std::pair<ModelConfig, fs::path> read_folder_config(const fs::path& folder, std::vector<std::string>& notes) {
    std::error_code error;
    NCE_CHECK(fs::is_directory(folder, error), "sentence-transformers folder: '{}' is not a folder", folder.string());
    const bool bare = !fs::exists(folder / "modules.json", error);
    Pipeline pipeline{folder, {}, false};
    if (!bare) pipeline = read_modules(folder);
    const fs::path transformer = pipeline.transformer;
    ModelConfig config = read_model_config(transformer / "config.json");
    config.normalize = pipeline.normalize;
    if (bare) {
        config.pooling = "mean";
        notes.push_back(fmt::format("{}: no modules.json: a bare Hugging Face encoder, read as sentence-transformers "
                                    "builds it: mean pooling, no normalisation", folder.string()));
    } else {
        read_pooling_config(pipeline.pooling / "config.json", config);
    }
    read_max_length(transformer, config);
    read_prompts(folder / "config_sentence_transformers.json", config, notes);
    try {
        validate_config(config);
    } catch (const Error& e) {
        fail("'{}': the config describes no model nce can build: {}", (transformer / "config.json").string(), e.what());
    }
    check_vocabulary(transformer, config.vocab_size);
    check_tensors(transformer / "model.safetensors", config, notes);
    return {config, transformer};
}

// ---- writing ----

void write_json(const fs::path& path, const Json& json) {
    std::ofstream out(path, std::ios::binary);
    out << json.dump(2) << "\n";
    out.close();
    NCE_CHECK(out.good(), "save_sentence_transformers: writing '{}' failed", path.string());
}

// config.json's model_type: as read, or what the position scheme implies.
std::string hugging_face_type(const ModelConfig& c) {
    if (!c.hugging_face_type.empty()) return c.hugging_face_type;
    return c.position_offset > 0 ? "roberta" : "bert";
}

Json hugging_face_config(const ModelConfig& c, Dtype dtype) {
    const bool roberta = c.position_offset > 0;
    const std::string type = hugging_face_type(c);
    const char* architecture = type == "xlm-roberta" ? "XLMRobertaModel" : roberta ? "RobertaModel" : "BertModel";
    return Json{
        {"architectures", {architecture}},
        {"model_type", type},
        {"vocab_size", c.vocab_size},
        {"hidden_size", c.d_model},
        {"num_hidden_layers", c.num_layers},
        {"num_attention_heads", c.nhead},
        {"intermediate_size", c.dim_feedforward},
        {"hidden_act", c.activation},
        {"hidden_dropout_prob", c.dropout},
        {"attention_probs_dropout_prob", c.attention_dropout},
        {"max_position_embeddings", c.max_position_embeddings},
        {"type_vocab_size", c.type_vocab_size},
        {"layer_norm_eps", c.layer_norm_eps},
        {"pad_token_id", roberta ? c.position_offset - 1 : 0},
        {"position_embedding_type", "absolute"},
        {"initializer_range", 0.02},
        {"dtype", dtype == Dtype::Float64 ? "float64" : "float32"},
    };
}

Json pooling_config(const ModelConfig& c) {
    return Json{{"word_embedding_dimension", c.d_model},
                {"pooling_mode_cls_token", c.pooling == "cls"},
                {"pooling_mode_mean_tokens", c.pooling == "mean"},
                {"pooling_mode_max_tokens", c.pooling == "max"},
                {"pooling_mode_mean_sqrt_len_tokens", c.pooling == "mean_sqrt_len"},
                {"pooling_mode_weightedmean_tokens", false},
                {"pooling_mode_lasttoken", false},
                {"include_prompt", true}};
}

void write_folder_contents(const fs::path& folder, EmbeddingModel& model, const fs::path& tokenizer_folder,
                           const std::map<std::string, Tensor>& pooler) {
    const ModelConfig& c = model.config();
    Dtype dtype = Dtype::Float32;
    std::map<std::string, Tensor> tensors;
    for (auto& [name, parameter] : model.named_parameters()) {
        if (name == "log_tau") continue;
        tensors[name] = parameter->value();
        dtype = parameter->dtype();
    }
    for (const auto& [name, tensor] : pooler) tensors[name] = tensor.to(dtype);
    write_safetensors((folder / "model.safetensors").string(), tensors, {{"format", "pt"}});
    write_json(folder / "config.json", hugging_face_config(c, dtype));
    write_json(folder / "sentence_bert_config.json", Json{{"max_seq_length", c.max_len}, {"do_lower_case", false}});
    fs::create_directory(folder / "1_Pooling");
    write_json(folder / "1_Pooling" / "config.json", pooling_config(c));
    Json modules = Json::array();
    modules.push_back({{"idx", 0}, {"name", "0"}, {"path", ""}, {"type", "sentence_transformers.models.Transformer"}});
    modules.push_back({{"idx", 1}, {"name", "1"}, {"path", "1_Pooling"}, {"type", "sentence_transformers.models.Pooling"}});
    if (c.normalize) {
        fs::create_directory(folder / "2_Normalize");
        modules.push_back(
            {{"idx", 2}, {"name", "2"}, {"path", "2_Normalize"}, {"type", "sentence_transformers.models.Normalize"}});
    }
    write_json(folder / "modules.json", modules);
    Json prompts = Json::object();
    if (!c.query_prompt.empty()) prompts["query"] = c.query_prompt;
    if (!c.passage_prompt.empty()) prompts["document"] = c.passage_prompt;
    write_json(folder / "config_sentence_transformers.json",
               Json{{"prompts", prompts}, {"default_prompt_name", nullptr}, {"similarity_fn_name", "cosine"}});
    for (const std::string& name : kTokenizerFiles) {
        std::error_code error;
        if (fs::is_regular_file(tokenizer_folder / name, error)) fs::copy_file(tokenizer_folder / name, folder / name);
    }
}

}  // namespace

SentenceTransformersFolder read_sentence_transformers_folder(const std::string& folder) {
    SentenceTransformersFolder read;
    auto [config, transformer] = read_folder_config(folder, read.notes);
    read.config = std::move(config);
    read.weights = (transformer / "model.safetensors").string();
    return read;
}

ModelConfig sentence_transformers_config(const std::string& folder, std::vector<std::string>* notes) {
    SentenceTransformersFolder read = read_sentence_transformers_folder(folder);
    if (notes) *notes = std::move(read.notes);
    return read.config;
}

PretrainedModel load_sentence_transformers(const SentenceTransformersFolder& folder, Dtype dtype) {
    NCE_CHECK(is_floating(dtype), "load_sentence_transformers: the dtype must be float32 or float64, not {}",
              dtype_name(dtype));
    PretrainedModel result;
    result.notes = folder.notes;
    // Everything is checked; now the data.
    SafetensorsFile file = read_safetensors(folder.weights);
    const int64_t width = folder.config.d_model;
    const std::map<std::string, Shape> pooler_shapes = {{"pooler.dense.weight", {width, width}},
                                                        {"pooler.dense.bias", {width}}};
    std::map<std::string, Tensor> tensors;
    for (auto& [name, tensor] : file.tensors) {
        auto pooler = pooler_shapes.find(name);
        if (pooler != pooler_shapes.end() && tensor.shape() == pooler->second) result.pooler[name] = tensor.to(dtype);
        if (!is_unused_tensor(name)) tensors.emplace(name, std::move(tensor));
    }
    if (result.pooler.size() != pooler_shapes.size()) result.pooler.clear();  // a pooler whole, or none
    Generator unused_initialisation(0);  // every parameter is overwritten from the file
    result.model = make_model(folder.config, unused_initialisation, dtype);
    load_parameters(*result.model, tensors, folder.weights);
    result.model->train(false);
    return result;
}

PretrainedModel load_sentence_transformers(const std::string& folder, Dtype dtype) {
    return load_sentence_transformers(read_sentence_transformers_folder(folder), dtype);
}

void save_sentence_transformers(const std::string& folder, EmbeddingModel& model, const std::string& tokenizer_folder,
                                const std::map<std::string, Tensor>& pooler) {
    const char* op = "save_sentence_transformers";
    NCE_CHECK(model.config().kind == "bert",
              "{}: '{}': the model is a {}; a sentence-transformers folder holds a bert (nn/bert_encoder.h)", op,
              folder, model.config().kind);
    const fs::path target = fs::absolute(fs::path(folder).lexically_normal());
    std::error_code error;
    NCE_CHECK(!fs::exists(target, error) || (fs::is_directory(target, error) && fs::is_empty(target, error)),
              "{}: '{}' already exists and is not an empty folder; choose a new path", op, folder);
    NCE_CHECK(fs::is_directory(target.parent_path(), error), "{}: '{}': the folder it goes into does not exist", op,
              folder);
    check_vocabulary(tokenizer_folder, model.config().vocab_size);
    // Written beside the target, renamed into place once whole.
    const fs::path temporary = target.string() + fmt::format(".tmp-{}", ::getpid());
    fs::remove_all(temporary, error);
    try {
        fs::create_directory(temporary);
        write_folder_contents(temporary, model, tokenizer_folder, pooler);
        if (fs::exists(target, error)) fs::remove(target);  // empty, checked above
        fs::rename(temporary, target);
    } catch (const std::exception& e) {
        fs::remove_all(temporary, error);
        fail("{}: writing '{}' failed, nothing was left there: {}", op, folder, e.what());
    }
}

}  // namespace nce::nn
