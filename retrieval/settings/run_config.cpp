// Run configuration: defaults <- JSON file <- flags, through one JSON form of RunConfig.
#include "retrieval/settings/run_config.h"
#include "retrieval/settings/model_names.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <set>
#include <variant>

#include "data/batching.h"
#include "data/tokenizer.h"
#include "engine/atomic_file.h"
#include "engine/error.h"
#include "engine/gemm_precision.h"
#include "engine/json_nesting.h"
#include "engine/message_text.h"
#include "losses/loss.h"
#include "nn/model.h"
#include "nn/schedule.h"
#include "retrieval/settings/device_name.h"
#include "retrieval/embedding/training_losses.h"

// The enum settings as JSON strings, found by argument-dependent lookup in each enum's
// namespace. A name outside the choices never reaches from_json: apply_run_config_json
// checks it against the setting's choices first.
namespace nce {
void to_json(nlohmann::json& json, Device device) { json = device_name(device); }
void from_json(const nlohmann::json& json, Device& device) { device = retrieval::parse_device_name(json.get<std::string>()); }
}  // namespace nce
namespace nce::data {
void to_json(nlohmann::json& json, TokenizerModelType type) { json = tokenizer_model_type_name(type); }
void from_json(const nlohmann::json& json, TokenizerModelType& type) {
    type = parse_tokenizer_model_type(json.get<std::string>());
}
void to_json(nlohmann::json& json, TripletNegatives negatives) { json = triplet_negatives_name(negatives); }
void from_json(const nlohmann::json& json, TripletNegatives& negatives) {
    negatives = parse_triplet_negatives(json.get<std::string>());
}
}  // namespace nce::data
namespace nce::nn {
void to_json(nlohmann::json& json, ScheduleKind kind) { json = schedule_kind_name(kind); }
void from_json(const nlohmann::json& json, ScheduleKind& kind) { kind = schedule_kind_from_name(json.get<std::string>()); }
}  // namespace nce::nn
namespace nce::retrieval {
void to_json(nlohmann::json& json, LexicalHead head) { json = lexical_head_name(head); }
void from_json(const nlohmann::json& json, LexicalHead& head) { head = parse_lexical_head(json.get<std::string>()); }
}  // namespace nce::retrieval

namespace nce::retrieval {
namespace {

namespace fs = std::filesystem;

// Every setting once: its JSON key (its flag is the key with dashes: batch_size ->
// --batch-size), the group its flag is listed under in --help, the RunConfig field it is, the
// values a text setting takes (empty: any text), and its help line (nullptr: no flag of that
// name: loss_parameters has --loss-parameter, checkpoint_activations a switch, app is the
// app's own). config.json, --config files, the flags and their --help all come from it.
// The enums are a setting with choices: their names in JSON and on the command line
// (to_json / from_json below), checked against the choices before they are read.
using SettingField = std::variant<std::string RunConfig::*, uint64_t RunConfig::*, int64_t RunConfig::*,
                                  double RunConfig::*, bool RunConfig::*,
                                  std::map<std::string, std::string> RunConfig::*, nlohmann::json RunConfig::*,
                                  data::TokenizerModelType RunConfig::*, data::TripletNegatives RunConfig::*,
                                  Device RunConfig::*, nn::ScheduleKind RunConfig::*, LexicalHead RunConfig::*>;

struct Setting {
    const char* name;
    const char* group;
    SettingField field;
    std::vector<std::string> choices;
    const char* help;
};

const std::vector<Setting>& settings() {
    static const std::vector<Setting> table = {
        {"data", "Where", &RunConfig::data, {},
         "data file or folder (default: the app's generated data)"},
        {"output", "Where", &RunConfig::output, {},
         "folder for everything the run writes"},
        {"seed", "Where", &RunConfig::seed, {},
         "seed of every random choice (data, split, init, batches, dropout)"},
        {"validation_fraction", "The split", &RunConfig::validation_fraction, {},
         "share of queries (by group) in the validation split"},
        {"test_fraction", "The split", &RunConfig::test_fraction, {},
         "share of queries (by group) in the test split"},
        {"vocab_size", "Tokenizer", &RunConfig::vocab_size, {},
         "tokenizer vocabulary size (-1: sized to the data)"},
        {"tokenizer_type", "Tokenizer", &RunConfig::tokenizer_type, {"unigram", "bpe"},
         "tokenizer model: unigram or bpe"},
        {"character_coverage", "Tokenizer", &RunConfig::character_coverage, {},
         "share of characters the tokenizer covers"},
        {"d_model", "Model", &RunConfig::d_model, {},
         "model width"},
        {"num_layers", "Model", &RunConfig::num_layers, {},
         "transformer layers"},
        {"nhead", "Model", &RunConfig::nhead, {},
         "attention heads"},
        {"dim_feedforward", "Model", &RunConfig::dim_feedforward, {},
         "feed-forward width"},
        {"dropout", "Model", &RunConfig::dropout, {},
         "dropout probability while training (--init of a pretrained model: its own hidden_dropout_prob unless given)"},
        {"lexical_head", "Model", &RunConfig::lexical_head, {"none", "max_pooled", "term_weights", "both"},
         "the model's lexical head beside the mean-pooled vector: term_weights (one number per vocabulary "
         "piece, written by the text's own tokens), max_pooled (a max-pooled vector of --lexical-dim), both, "
         "or none"},
        {"lexical_dim", "Model", &RunConfig::lexical_dim, {},
         "the max-pooled lexical vector's width (0: 6 x d_model); given without --lexical-head, as "
         "before it: N > 0 max_pooled of N, 0 none, -1 max_pooled, -2 term_weights, -3 both"},
        {"max_query_length", "Model", &RunConfig::max_query_length, {},
         "query tokens kept, the query prompt's included (longer queries are truncated and counted; "
         "-1: sized to the data)"},
        {"max_passage_length", "Model", &RunConfig::max_passage_length, {},
         "passage tokens kept, the passage prompt's included (longer passages are truncated and "
         "counted, or read in windows where the app does; -1: sized to the data)"},
        {"query_prompt", "Model", &RunConfig::query_prompt, {},
         "text written before every query the model reads, e.g. \"query: \" (its tokens count "
         "towards --max-query-length); saved in the model, applied by index and search"},
        {"passage_prompt", "Model", &RunConfig::passage_prompt, {},
         "text written before every passage the model reads, e.g. \"passage: \" (its tokens count "
         "towards --max-passage-length); saved in the model, applied by index"},
        {"loss", "Training", &RunConfig::loss, training_loss_names(),
         "training loss (retrieval/embedding/training_losses.h: the batches each draws; its parameters: nce loss --list)"},
        {"loss_parameters", "Training", &RunConfig::loss_parameters, {}, nullptr},
        {"batch_grouping", "Training", &RunConfig::batch_grouping, {"random", "by_group"},
         "which questions share a batch: random (from the whole split), or by_group (one article's or thread's "
         "side by side, so the in-batch negatives are its other passages: harder ones)"},
        {"bm25_negatives", "Training", &RunConfig::bm25_negatives, {},
         "hard negatives per training question: the training passages BM25 ranks highest that do not answer it, "
         "read as the data's hard negatives by the losses that take them (retrieval/embedding/training_losses.h; 0: none)"},
        {"triplet_negatives", "Training", &RunConfig::triplet_negatives, {"hard_negative", "in_batch", "mixed"},
         "triplet's negatives: hard_negative, in_batch, mixed"},
        {"batch_size", "Training", &RunConfig::batch_size, {},
         "rows per training batch"},
        {"mini_batch_size", "Training", &RunConfig::mini_batch_size, {},
         "GradCache: rows embedded at a time, the batch's exact gradient in less memory "
         "(0: the whole batch; infonce, infonce_symmetric, matryoshka)"},
        {"checkpoint_activations", "Training", &RunConfig::checkpoint_activations, {}, nullptr},
        {"device", "Training", &RunConfig::device, {"cpu", "cuda"},
         "compute on cpu or cuda: train, pretrain, eval and index move the model and each batch to the GPU "
         "and the embeddings back (checked against the CPU on the CUDA backend's host-run build, and once "
         "on an H200)"},
        {"gemm_precision", "Training", &RunConfig::gemm_precision, {"float32", "bfloat16"},
         "float32 or bfloat16: float32 GEMMs round their operands to bfloat16 and accumulate in "
         "float32 (oneDNN; CPU only); default: NCE_GEMM_PRECISION, else float32"},
        {"max_steps", "Training", &RunConfig::max_steps, {},
         "training step budget"},
        {"epochs", "Training", &RunConfig::epochs, {},
         "most epochs (max_steps usually ends the run first)"},
        {"learning_rate", "Training", &RunConfig::learning_rate, {},
         "AdamW learning rate"},
        {"weight_decay", "Training", &RunConfig::weight_decay, {},
         "AdamW weight decay"},
        {"schedule", "Training", &RunConfig::schedule, {"constant", "linear", "cosine"},
         "learning-rate schedule: constant, linear, cosine"},
        {"warmup_steps", "Training", &RunConfig::warmup_steps, {},
         "steps of linear warmup (when not set: the app's, or a tenth of --max-steps if that is less)"},
        {"max_grad_norm", "Training", &RunConfig::max_grad_norm, {},
         "clip the gradient norm to this (0: no clipping)"},
        {"evaluate_every", "Training", &RunConfig::evaluate_every, {},
         "steps between validation evaluations (0: none)"},
        {"patience", "Training", &RunConfig::patience, {},
         "evaluations without improvement before stopping (0: never)"},
        {"init", "Where training starts", &RunConfig::init, {},
         "model to start from: a sentence-transformers or Hugging Face encoder folder (its tokenizer, fine-tuning "
         "defaults) or the name of one scripts/pretrained.sh installed (e.g. multilingual-e5-small), or an nce "
         "checkpoint of the same kind and size; train skips corpus pretraining"},
        {"pretrain_steps", "Where training starts", &RunConfig::pretrain_steps, {},
         "corpus pretraining steps before the pairs (-1: sized to the corpus, 0: none)"},
        {"pretrain_batch_size", "Where training starts", &RunConfig::pretrain_batch_size, {},
         "pseudo-queries per pretraining step"},
        {"pretrain_candidates", "Where training starts", &RunConfig::pretrain_candidates, {},
         "BM25's top-k per pseudo-query, the pretraining teacher's candidates"},
        {"bm25_k1", "Evaluation", &RunConfig::bm25_k1, {},
         "BM25 k1"},
        {"bm25_b", "Evaluation", &RunConfig::bm25_b, {},
         "BM25 b"},
        {"candidate_depth", "Evaluation", &RunConfig::candidate_depth, {},
         "passages each ranking keeps (the hybrid fuses these)"},
        {"encode_batch_size", "Evaluation", &RunConfig::encode_batch_size, {},
         "texts per forward pass when encoding"},
        {"top_k", "Evaluation", &RunConfig::top_k, {},
         "search: results to print"},
        {"truncate_dim", "Evaluation", &RunConfig::truncate_dim, {},
         "index: keep each embedding's first N numbers, re-normalised (a matryoshka model); 0: all"},
        {"app", "App", &RunConfig::app, {}, nullptr},
    };
    return table;
}

// The type --help shows for a setting's value.
std::string type_name(const Setting& setting) {
    if (!setting.choices.empty()) {
        std::string shown;
        for (const std::string& choice : setting.choices) shown += (shown.empty() ? "{" : ",") + choice;
        return shown + "}";
    }
    if (std::holds_alternative<uint64_t RunConfig::*>(setting.field)) return "UINT";
    if (std::holds_alternative<int64_t RunConfig::*>(setting.field)) return "INT";
    if (std::holds_alternative<double RunConfig::*>(setting.field)) return "FLOAT";
    return "TEXT";
}

const Setting& setting_named(const std::string& name) {
    for (const Setting& setting : settings())
        if (name == setting.name) return setting;
    fail("config: no setting named '{}'", name);
}

// "cpu or cuda", "hard_negative, in_batch or mixed".
std::string choice_list(const std::vector<std::string>& choices) {
    std::string list;
    for (size_t i = 0; i < choices.size(); ++i)
        list += (i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ") + choices[i];
    return list;
}

std::string flag_name(const std::string& field) {
    std::string flag = "--" + field;
    for (char& c : flag)
        if (c == '_') c = '-';
    return flag;
}

// Reads `text` as the JSON type of `expected`; throws naming `source` on a bad value.
nlohmann::json parse_flag_value(const std::string& text, const nlohmann::json& expected, const std::string& source) {
    try {
        size_t used = 0;
        if (expected.is_number_unsigned()) {
            NCE_CHECK(!text.empty() && text[0] != '-', "{}: expected a non-negative integer, got '{}'", source, text);
            uint64_t value = std::stoull(text, &used);
            NCE_CHECK(used == text.size(), "{}: expected a non-negative integer, got '{}'", source, text);
            return value;
        }
        if (expected.is_number_integer()) {
            int64_t value = std::stoll(text, &used);
            NCE_CHECK(used == text.size(), "{}: expected an integer, got '{}'", source, text);
            return value;
        }
        if (expected.is_number()) {
            double value = std::stod(text, &used);
            NCE_CHECK(used == text.size(), "{}: expected a number, got '{}'", source, text);
            return value;
        }
    } catch (const std::logic_error&) {  // stoll/stod: not a number, or out of range
        fail("{}: expected a number, got '{}'", source, text);
    }
    return text;
}

bool same_kind(const nlohmann::json& expected, const nlohmann::json& value) {
    if (expected.is_number_unsigned()) return value.is_number_unsigned() || (value.is_number_integer() && value.get<int64_t>() >= 0);
    if (expected.is_number_integer()) return value.is_number_integer();
    if (expected.is_number()) return value.is_number();
    if (expected.is_string()) return value.is_string();
    if (expected.is_object()) return value.is_object();
    if (expected.is_boolean()) return value.is_boolean();
    return false;
}

const char* kind_name(const nlohmann::json& expected) {
    if (expected.is_number_unsigned()) return "a non-negative integer";
    if (expected.is_number_integer()) return "an integer";
    if (expected.is_number()) return "a number";
    if (expected.is_string()) return "a string";
    if (expected.is_boolean()) return "true or false";
    return "an object";
}

// Before lexical_head, lexical_dim alone chose the head: N > 0 a max-pooled vector of N, 0 none,
// -1 a max-pooled vector of 6 x d_model, -2 the term weights, -3 both. Settings that give
// lexical_dim without lexical_head (an earlier run's config.json, a flag used as before) are
// read so; with lexical_head given, lexical_dim is the width alone.
nlohmann::json with_lexical_head(nlohmann::json json) {
    if (!json.contains("lexical_dim") || json.contains("lexical_head") || !json["lexical_dim"].is_number_integer())
        return json;
    const int64_t old = json["lexical_dim"].get<int64_t>();
    if (old < -3) return json;  // left for validate_run_config to name
    const LexicalHead head = old > 0 || old == -1 ? LexicalHead::MaxPooled
                             : old == -2          ? LexicalHead::TermWeights
                             : old == -3          ? LexicalHead::Both
                                                  : LexicalHead::None;
    json["lexical_head"] = lexical_head_name(head);
    json["lexical_dim"] = std::max<int64_t>(old, 0);
    return json;
}

RunConfig run_config_from_json(const nlohmann::json& json) {
    RunConfig config;
    for (const Setting& setting : settings())
        std::visit([&](auto field) {
            config.*field = json.at(setting.name).template get<std::decay_t<decltype(config.*field)>>();
        }, setting.field);
    return config;
}

}  // namespace

const char* lexical_head_name(LexicalHead head) {
    switch (head) {
        case LexicalHead::None: return "none";
        case LexicalHead::MaxPooled: return "max_pooled";
        case LexicalHead::TermWeights: return "term_weights";
        case LexicalHead::Both: return "both";
    }
    return "unknown";
}

LexicalHead parse_lexical_head(const std::string& name) {
    for (LexicalHead head : {LexicalHead::None, LexicalHead::MaxPooled, LexicalHead::TermWeights, LexicalHead::Both})
        if (name == lexical_head_name(head)) return head;
    fail("config: lexical_head must be none, max_pooled, term_weights or both, got {} (flag --lexical-head)",
         quoted_for_message(name));
}

int64_t lexical_width(const RunConfig& config) {
    if (config.lexical_head != LexicalHead::MaxPooled && config.lexical_head != LexicalHead::Both) return 0;
    // 6 x d_model: many more features than d_model for a text's words to light, for a
    // projection of 6 d_model^2 multiply-adds per token (a third of what two encoder layers
    // of d_model 128 cost); docs/retrieval_training.md has what it moved.
    return config.lexical_dim > 0 ? config.lexical_dim : 6 * config.d_model;
}

bool has_term_weights(const RunConfig& config) {
    return config.lexical_head == LexicalHead::TermWeights || config.lexical_head == LexicalHead::Both;
}

nlohmann::json run_config_to_json(const RunConfig& config) {
    nlohmann::json json = nlohmann::json::object();
    for (const Setting& setting : settings())
        std::visit([&](auto field) { json[setting.name] = config.*field; }, setting.field);
    return json;
}

void apply_run_config_json(RunConfig& config, const nlohmann::json& given, const std::string& source) {
    NCE_CHECK(given.is_object(), "{}: a run config must be a JSON object of settings", source);
    const nlohmann::json json = with_lexical_head(given);
    nlohmann::json merged = run_config_to_json(config);
    for (const auto& [key, value] : json.items()) {
        NCE_CHECK(merged.contains(key), "{}: unknown setting '{}' (settings are the flag names with underscores, "
                  "e.g. batch_size; app settings go under \"app\")", source, key);
        const nlohmann::json& expected = merged[key];
        if (key == "loss_parameters") {
            NCE_CHECK(value.is_object(), "{}: loss_parameters must be an object like {{\"tau\": 0.05}}", source);
            for (const auto& [name, setting] : value.items()) {
                NCE_CHECK(setting.is_string() || setting.is_number(),
                          "{}: loss_parameters.{} must be a number or a string", source, name);
                merged[key][name] = setting.is_string() ? setting.get<std::string>() : setting.dump();
            }
            continue;
        }
        NCE_CHECK(same_kind(expected, value), "{}: setting '{}' must be {}, got {}", source, key, kind_name(expected),
                  value.dump());
        const std::vector<std::string>& choices = setting_named(key).choices;
        if (!choices.empty() && std::find(choices.begin(), choices.end(), value.get<std::string>()) == choices.end())
            fail("{}: {} must be {}, got '{}' (flag {})", source == "command line" ? "config" : source, key,
                 choice_list(choices), value.get<std::string>(), flag_name(key));
        merged[key] = value;
    }
    config = run_config_from_json(merged);
}

void validate_run_config(const RunConfig& c) {
    auto positive = [](int64_t value, const char* field) {
        NCE_CHECK(value > 0, "config: {} must be positive, got {} (flag {})", field, value, flag_name(field));
    };
    auto sized_or_positive = [](int64_t value, const char* field) {
        NCE_CHECK(value > 0 || value == kSizedToData,
                  "config: {} must be positive, or -1 (sized to the data), got {} (flag {})", field, value,
                  flag_name(field));
    };
    auto non_negative = [](double value, const char* field) {
        NCE_CHECK(value >= 0, "config: {} must be >= 0, got {} (flag {})", field, value, flag_name(field));
    };
    NCE_CHECK(!c.output.empty(), "config: output must name a folder (flag --output)");
    NCE_CHECK(c.validation_fraction > 0 && c.validation_fraction < 1,
              "config: validation_fraction must be in (0, 1), got {} (flag --validation-fraction)", c.validation_fraction);
    NCE_CHECK(c.test_fraction > 0 && c.test_fraction < 1, "config: test_fraction must be in (0, 1), got {} (flag --test-fraction)",
              c.test_fraction);
    NCE_CHECK(c.validation_fraction + c.test_fraction < 1,
              "config: validation_fraction + test_fraction must be below 1, got {} + {}", c.validation_fraction, c.test_fraction);
    sized_or_positive(c.vocab_size, "vocab_size");
    NCE_CHECK(c.character_coverage > 0 && c.character_coverage <= 1,
              "config: character_coverage must be in (0, 1], got {} (flag --character-coverage)", c.character_coverage);
    positive(c.d_model, "d_model");
    positive(c.num_layers, "num_layers");
    positive(c.nhead, "nhead");
    NCE_CHECK(c.d_model % c.nhead == 0, "config: d_model ({}) must be a multiple of nhead ({})", c.d_model, c.nhead);
    positive(c.dim_feedforward, "dim_feedforward");
    NCE_CHECK(c.dropout >= 0 && c.dropout < 1, "config: dropout must be in [0, 1), got {} (flag --dropout)", c.dropout);
    NCE_CHECK(c.lexical_dim >= 0 && lexical_width(c) <= nn::kMaxModelWidth,
              "config: lexical_dim, the max-pooled lexical vector's width, must be 0 (6 x d_model) or up to {}, got {} "
              "(flag --lexical-dim; --lexical-head chooses the head)", nn::kMaxModelWidth, c.lexical_dim);
    sized_or_positive(c.max_query_length, "max_query_length");
    sized_or_positive(c.max_passage_length, "max_passage_length");
    for (const auto& [field, prompt] : {std::pair<const char*, const std::string&>{"query_prompt", c.query_prompt},
                                        {"passage_prompt", c.passage_prompt}})
        NCE_CHECK(prompt.size() <= nn::ModelConfig::kMaxPromptBytes, "config: {} has {} bytes; a prompt may have at "
                  "most {} (flag {})", field, prompt.size(), nn::ModelConfig::kMaxPromptBytes, flag_name(field));
    const losses::LossDefinition& loss = losses::find_loss(c.loss);  // throws naming the known ones
    for (const auto& [name, value] : c.loss_parameters) {
        bool known = false;
        for (const losses::ParamSpec& spec : loss.params) known = known || spec.name == name;
        NCE_CHECK(known, "config: loss {} has no parameter '{}' (nce loss --list shows its parameters)", c.loss, name);
        (void)value;
    }
    losses::make_parameters(loss, c.loss_parameters);  // each value against its rule (tau > 0, ...)
    positive(c.batch_size, "batch_size");
    NCE_CHECK(c.batch_size >= 2, "config: batch_size must be at least 2 (in-batch negatives), got {}", c.batch_size);
    NCE_CHECK(c.mini_batch_size >= 0, "config: mini_batch_size must be 0 (off) or positive, got {} (flag "
              "--mini-batch-size)", c.mini_batch_size);
    NCE_CHECK(c.mini_batch_size == 0 || training_loss(c.loss).grad_cache_loss,
              "config: mini_batch_size (GradCache) works with infonce, infonce_symmetric and matryoshka, not {}; set it "
              "to 0 or change --loss", c.loss);
    NCE_CHECK(c.gemm_precision.empty() || c.gemm_precision == "float32" || c.gemm_precision == "bfloat16",
              "config: gemm_precision must be float32 or bfloat16, got '{}' (flag --gemm-precision)", c.gemm_precision);
    NCE_CHECK(c.gemm_precision != "bfloat16" || c.device == Device::CPU, "config: gemm_precision bfloat16 applies to the "
              "CPU backend's GEMMs; run it with --device cpu (flag --gemm-precision)");
    positive(c.max_steps, "max_steps");
    positive(c.epochs, "epochs");
    NCE_CHECK(c.learning_rate > 0, "config: learning_rate must be positive, got {} (flag --learning-rate)", c.learning_rate);
    non_negative(c.weight_decay, "weight_decay");
    NCE_CHECK(c.warmup_steps >= 0 && c.warmup_steps <= c.max_steps,
              "config: warmup_steps must be in [0, max_steps = {}], got {} (flag --warmup-steps)", c.max_steps, c.warmup_steps);
    non_negative(c.max_grad_norm, "max_grad_norm");
    non_negative(static_cast<double>(c.evaluate_every), "evaluate_every");
    non_negative(static_cast<double>(c.patience), "patience");
    non_negative(static_cast<double>(c.bm25_negatives), "bm25_negatives");
    NCE_CHECK(c.pretrain_steps >= -1, "config: pretrain_steps must be -1 (sized to the corpus), 0 (none) or a step "
              "count, got {} (flag --pretrain-steps)", c.pretrain_steps);
    NCE_CHECK(c.pretrain_batch_size >= 2, "config: pretrain_batch_size must be at least 2, got {} (flag "
              "--pretrain-batch-size)", c.pretrain_batch_size);
    NCE_CHECK(c.pretrain_candidates >= 2, "config: pretrain_candidates must be at least 2 (the teacher ranks them), got "
              "{} (flag --pretrain-candidates)", c.pretrain_candidates);
    NCE_CHECK(c.bm25_k1 >= 0, "config: bm25_k1 must be >= 0, got {}", c.bm25_k1);
    NCE_CHECK(c.bm25_b >= 0 && c.bm25_b <= 1, "config: bm25_b must be in [0, 1], got {}", c.bm25_b);
    positive(c.candidate_depth, "candidate_depth");
    NCE_CHECK(c.candidate_depth >= 10, "config: candidate_depth must be at least 10 (the metrics read the top 10), got {}",
              c.candidate_depth);
    positive(c.encode_batch_size, "encode_batch_size");
    NCE_CHECK(c.truncate_dim >= 0 && c.truncate_dim <= c.d_model, "config: truncate_dim must be in 0..d_model ({}), got "
              "{} (flag --truncate-dim)", c.d_model, c.truncate_dim);
    positive(c.top_k, "top_k");
}

void RunConfigOptions::add_to(CLI::App& command, const RunConfig& defaults) {
    defaults_ = defaults;
    nlohmann::json shown = run_config_to_json(defaults);
    command.add_option("--config", config_path_, "JSON file of settings (keys: the flag names with underscores); "
                                                  "flags given override it");
    for (const Setting& setting : settings()) {
        if (setting.help == nullptr) continue;
        const nlohmann::json& value = shown.at(setting.name);
        std::string default_text = value.is_string() ? value.get<std::string>() : value.dump();
        CLI::Option* option = command.add_option(flag_name(setting.name), values_[setting.name], setting.help);
        option->type_name(type_name(setting))->group(setting.group);
        if (!default_text.empty()) option->default_str(default_text);
        options_[setting.name] = option;
    }
    loss_parameter_option_ = command.add_option("--loss-parameter", loss_parameter_settings_,
                                                "a loss parameter as key=value (e.g. tau=0.05); repeatable")
                                 ->group("Training");
    command.add_flag("--no-pretrain", no_pretrain_, "skip corpus pretraining (same as --pretrain-steps 0)")
        ->group("Where training starts");
    command.add_flag("--checkpoint-activations", checkpoint_activations_, "recompute each encoder layer in the "
                     "backward instead of keeping its activations: the same gradients bit for bit in less memory, "
                     "for about a third more compute")
        ->group("Training");
    command.add_flag("--lenient", lenient_, "count and skip the data's bad records instead of stopping at the first")
        ->group("Where");
}

bool RunConfigOptions::given(const std::string& field) const {
    auto found = options_.find(field);
    return found != options_.end() && found->second->count() > 0;
}

namespace {

// A JSON config file, read whole; one line naming `flag` and the file when that fails.
nlohmann::json read_config_file(const std::string& path, const std::string& flag) {
    constexpr std::uintmax_t kMaxConfigBytes = 16 << 20;  // a config is a few hundred bytes
    std::error_code error;
    if (fs::exists(path, error)) {
        NCE_CHECK(fs::is_regular_file(path, error), "{} {}: not a regular file (a folder, device or pipe); give a "
                  "JSON file", flag, path);
        std::uintmax_t size = fs::file_size(path, error);
        NCE_CHECK(size <= kMaxConfigBytes, "{} {}: the file has {} MiB; a config file has at most {} MiB", flag, path,
                  size >> 20, kMaxConfigBytes >> 20);
    }
    std::ifstream file(path);
    NCE_CHECK(file.good(), "{} {}: cannot open the file (check the path)", flag, path);
    std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    check_json_nesting(text, fmt::format("{} {}", flag, path));
    try {
        return nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& error) {
        fail("{} {}: not valid JSON ({}); fix the file", flag, path, error.what());
    }
}

}  // namespace

RunConfig RunConfigOptions::resolve() const { return resolve_from(defaults_); }

bool RunConfigOptions::chosen(const std::string& field) const {
    return given(field) || (!config_path_.empty() && read_config_file(config_path_, "--config").contains(field));
}

RunConfig RunConfigOptions::resolve_over_run(const std::string& checkpoint) const {
    RunConfig first = resolve();  // where the output folder is
    std::string run_config = RunFiles(first.output).config;
    if (!fs::is_regular_file(run_config) && !checkpoint.empty())
        run_config = (fs::path(checkpoint).parent_path() / "config.json").string();
    if (!fs::is_regular_file(run_config)) return first;
    RunConfig base = defaults_;
    apply_run_config_json(base, read_config_file(run_config, "run config"), run_config);
    base.output = first.output;
    return resolve_from(base);
}

RunConfig RunConfigOptions::resolve_from(RunConfig config) const {
    const nlohmann::json file = config_path_.empty() ? nlohmann::json::object() : read_config_file(config_path_, "--config");
    if (!config_path_.empty()) apply_run_config_json(config, file, config_path_);
    nlohmann::json flags = nlohmann::json::object();
    nlohmann::json current = run_config_to_json(config);
    for (const Setting& setting : settings()) {
        if (!given(setting.name)) continue;
        flags[setting.name] =
            parse_flag_value(values_.at(setting.name), current.at(setting.name), flag_name(setting.name));
    }
    if (!loss_parameter_settings_.empty()) {
        nlohmann::json parameters = nlohmann::json::object();
        for (const std::string& setting : loss_parameter_settings_) {
            size_t equals = setting.find('=');
            NCE_CHECK(equals != std::string::npos && equals > 0,
                      "--loss-parameter expects key=value (e.g. --loss-parameter tau=0.05), got '{}'", setting);
            parameters[setting.substr(0, equals)] = setting.substr(equals + 1);
        }
        flags["loss_parameters"] = parameters;
    }
    apply_run_config_json(config, flags, "command line");
    if (no_pretrain_) config.pretrain_steps = 0;
    if (checkpoint_activations_) config.checkpoint_activations = true;
    if (lenient_) config.app["lenient"] = true;
    config.init = resolve_model_name(config.init, "--init");  // a name: the folder scripts/pretrained.sh made
    // A warmup the user did not set follows a shorter step budget: at most a tenth of it.
    if (!chosen("warmup_steps")) config.warmup_steps = std::min(config.warmup_steps, config.max_steps / 10);
    validate_run_config(config);
    for (const Setting& setting : settings())  // chosen(), with the file read once
        if (given(setting.name) || file.contains(setting.name)) config.chosen.insert(setting.name);
    if (no_pretrain_) config.chosen.insert("pretrain_steps");
    if (checkpoint_activations_) config.chosen.insert("checkpoint_activations");
    if (!loss_parameter_settings_.empty()) config.chosen.insert("loss_parameters");
    if (config.gemm_precision.empty()) config.gemm_precision = gemm_precision_name(gemm_precision());
    return config;
}

RunFiles::RunFiles(const std::string& output_folder)
    : output(output_folder),
      config((fs::path(output_folder) / "config.json").string()),
      tokenizer((fs::path(output_folder) / "tokenizer.model").string()),
      model((fs::path(output_folder) / "model.safetensors").string()),
      pretrained((fs::path(output_folder) / "pretrained.safetensors").string()),
      pretrain_log((fs::path(output_folder) / "pretrain_log.jsonl").string()),
      best_checkpoint((fs::path(output_folder) / "training_best.safetensors").string()),
      last_checkpoint((fs::path(output_folder) / "training_last.safetensors").string()),
      log((fs::path(output_folder) / "train_log.jsonl").string()),
      results((fs::path(output_folder) / "results.json").string()),
      split((fs::path(output_folder) / "split.json").string()),
      curves_svg((fs::path(output_folder) / "training_curves.svg").string()),
      metrics_svg((fs::path(output_folder) / "metrics.svg").string()),
      index((fs::path(output_folder) / "index").string()),
      model_card((fs::path(output_folder) / "README.md").string()) {}

namespace {

// A JSON object of at most 64 MB at `path` with every one of `keys`: a run's config.json
// ("loss", "max_steps", "seed") or the results.json an eval writes ("app", "rows", "against_bm25").
bool is_nce_json(const fs::path& path, std::initializer_list<const char*> keys) {
    std::error_code error;
    if (!fs::is_regular_file(path, error) || fs::file_size(path, error) > (64 << 20)) return false;
    std::ifstream file(path);
    nlohmann::json json = nlohmann::json::parse(file, nullptr, /*allow_exceptions=*/false);
    if (!json.is_object()) return false;
    for (const char* key : keys)
        if (!json.contains(key)) return false;
    return true;
}

// The folders this process holds the lock of, each once (flock locks conflict between two
// opens of one file even in one process); the descriptors stay open until the process ends.
std::set<std::string>& locked_folders() {
    static std::set<std::string> folders;
    return folders;
}

void lock_output_folder(const std::string& output) {
    std::error_code error;
    std::string key = fs::weakly_canonical(output, error).string();
    if (locked_folders().count(key) != 0) return;
    std::string lock_path = (fs::path(output) / ".nce-lock").string();
    int descriptor = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    NCE_CHECK(descriptor >= 0, "--output {}: cannot create its lock file ({}); choose a writable folder", output,
              std::strerror(errno));
    if (::flock(descriptor, LOCK_EX | LOCK_NB) != 0) {
        ::close(descriptor);
        fail("--output {}: another nce run is writing into this folder now; wait for it to end or give another "
             "--output", output);
    }
    locked_folders().insert(key);  // released by the kernel when the process ends, however it ends
}

}  // namespace

// (A folder that holds an eval's results.json counts as a run's too: eval into its own folder
// can be run again.)
void check_output_folder(const std::string& output) {
    std::error_code error;
    if (!fs::is_directory(output, error)) return;  // new (or a file: create_output_folder says so)
    fs::path folder(output);
    const auto run_config = {"loss", "max_steps", "seed"};
    if (is_nce_json(folder / "config.json", run_config) || is_nce_json(folder / "compare" / "config.json", run_config) ||
        is_nce_json(folder / "results.json", {"app", "rows", "against_bm25"}))
        return;
    std::vector<std::string> names;
    for (fs::directory_iterator entry(folder, error), end; !error && entry != end; entry.increment(error)) {
        std::string name = entry->path().filename().string();
        if (name != ".nce-lock") names.push_back(name);
    }
    if (names.empty()) return;
    std::sort(names.begin(), names.end());
    std::string shown = quoted_for_message(names.front(), 60);
    for (size_t i = 1; i < std::min<size_t>(names.size(), 3); ++i) shown += ", " + quoted_for_message(names[i], 60);
    fail("--output {}: the folder holds files that are not an nce run's ({}{}), which the run would overwrite; give a "
         "new or empty folder, or a previous run's", output, shown, names.size() > 3 ? ", ..." : "");
}

void create_output_folder(const std::string& output) {
    std::error_code error;
    fs::create_directories(output, error);
    NCE_CHECK(!error && fs::is_directory(output), "--output {}: cannot create the folder ({}); choose another path",
              output, error ? error.message() : "a file of that name exists");
    lock_output_folder(output);
}

void write_text_file_atomically(const std::string& path, const std::string& text) {
    write_bytes_atomically(path, "write", text);
}

void write_run_config(const std::string& path, const RunConfig& config) {
    write_text_file_atomically(path, run_config_to_json(config).dump(2) + "\n");
}

}  // namespace nce::retrieval
