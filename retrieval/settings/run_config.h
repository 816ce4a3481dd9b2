// The configuration of one app run (`nce korquad|stackexchange|code train ...`): where the
// data and the outputs are, the seed, the tokenizer, the model, the training budget and the
// evaluation. Every field has a default an app chooses; a JSON config file (--config) overrides
// the defaults, and command-line flags override the file:
//
//   app defaults  <-  --config run.json  <-  --batch-size 32 --seed 7 ...
//
// JSON keys are the field names below (snake_case); each field's flag is the same name with
// dashes (`learning_rate` -> `--learning-rate`). Loss parameters go in "loss_parameters"
// ({"tau": "0.05"}) or as `--loss-parameter tau=0.05`; defaults come from the loss catalogue
// (losses/loss.h). An app's own settings live under "app" in the file, untouched here.
// An unknown key, a value of the wrong type, or a value out of range is one error line naming
// the key (and the file), never a silent default.
//
// Every file a run writes sits in `output` (default runs/<app>), named by RunFiles.
#pragma once
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "data/batching.h"
#include "data/tokenizer.h"
#include "engine/dtype.h"
#include "nn/schedule.h"

// CLI11 by name only: <CLI/CLI.hpp> compiles its validators and help formatter into every
// file that includes it (seconds each, ten under the sanitizers), so only the files that
// build a command line include it.
namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace nce::retrieval {

// The text_encoder's lexical head beside its mean-pooled vector (nn/text_encoder.h); the
// embedding is the mean-pooled vector joined to what the head gives.
enum class LexicalHead {
    None,         // "none": the mean-pooled vector alone
    MaxPooled,    // "max_pooled": a max-pooled log(1 + relu) vector of lexical_width() numbers
    TermWeights,  // "term_weights" (the retrieval apps' default): one number per vocabulary piece,
                  // written by the text's own tokens
    Both,         // "both": the term weights and the max-pooled vector
};
const char* lexical_head_name(LexicalHead head);
LexicalHead parse_lexical_head(const std::string& name);  // throws naming the choices

struct RunConfig {
    // ---- where ----
    std::string data;                  // the data file or folder; empty: the app's generated default
    std::string output = "runs/app";   // every file the run writes goes here
    uint64_t seed = 13;                // fixes the data, split, init, batches and dropout

    // ---- the split (by group: article, thread, file), fractions of queries ----
    double validation_fraction = 0.1;
    double test_fraction = 0.2;

    // The settings the user chose, by name (a flag given, or a key of the --config file):
    // filled by RunConfigOptions::resolve(). Defaults that depend on the run (fine-tuning's
    // learning rate, a model's own dropout) replace only the settings not in it. Not written
    // to config.json.
    std::set<std::string> chosen;

    // ---- tokenizer (SentencePiece, trained on the training split's texts) ----
    int64_t vocab_size = 4000;
    data::TokenizerModelType tokenizer_type = data::TokenizerModelType::Unigram;  // "unigram" or "bpe" in JSON and flags
    double character_coverage = 0.9995;

    // ---- model: a text_encoder (nn/text_encoder.h) ----
    int64_t d_model = 128;
    int64_t num_layers = 2;
    int64_t nhead = 4;
    int64_t dim_feedforward = 256;
    double dropout = 0.1;
    LexicalHead lexical_head = LexicalHead::None;  // "none", "max_pooled", "term_weights", "both"
    int64_t lexical_dim = 0;  // the max-pooled vector's width (max_pooled, both); 0: 6 x d_model
    int64_t max_query_length = 32;     // tokens; longer queries are truncated (and counted)
    int64_t max_passage_length = 128;  // tokens; the model's max_len is the larger of the two
    // Text written before every query / passage the model reads (e.g. "query: "), before
    // tokenization; the lengths above count its tokens. Stored in the model's config, so
    // index, search and encode apply the checkpoint's own. BM25 reads the texts without them.
    std::string query_prompt;
    std::string passage_prompt;

    // ---- training (nn::Trainer) ----
    std::string loss = "infonce";      // one of training_loss_names() (retrieval/embedding/training_losses.h)
    std::map<std::string, std::string> loss_parameters;  // e.g. {"tau": "0.05"}; unset ones take the catalogue's default
    data::TripletNegatives triplet_negatives = data::TripletNegatives::Mixed;  // "hard_negative", "in_batch", "mixed"
    int64_t batch_size = 64;
    // "random": each batch's questions drawn from the whole training split; "by_group": the
    // questions of one group (an article, a thread) side by side, the groups in a random order,
    // so most in-batch negatives come from the rows' own groups (data/batching.h).
    std::string batch_grouping = "random";
    // Hard negatives mined with BM25 on the training split (retrieval/train/bm25_negatives.h): each
    // training question gets this many, added to its batches; 0: none.
    int64_t bm25_negatives = 0;
    // GradCache (nn/grad_cache.h): embed a batch this many rows at a time, with the exact
    // gradient of the whole batch's loss; 0: the whole batch at once. infonce,
    // infonce_symmetric and matryoshka only.
    int64_t mini_batch_size = 0;
    // Activation checkpointing (nn/checkpoint_activations.h): keep only each encoder layer's
    // input in the forward and recompute the layer in the backward; the same gradients bit
    // for bit in about half the activation memory, for about a third more compute.
    bool checkpoint_activations = false;
    // cpu or cuda. The retrieval apps' train / pretrain / eval / index check it before
    // they read or write anything: cuda on a machine or build without a GPU backend stops
    // with one line naming why (retrieval/run/retrieval_app.cpp, require_run_device); with
    // one, the run computes on the GPU (retrieval/embedding/run_device.h says what moves where).
    Device device = Device::CPU;
    // The precision of the run's float32 GEMMs (engine/gemm_precision.h): "float32", or
    // "bfloat16" (operands rounded to bfloat16, float32 accumulation, oneDNN; CPU only).
    // Empty: the engine's setting (NCE_GEMM_PRECISION, default float32), which resolve()
    // writes in, so config.json and results.json say which ran. The command sets it.
    std::string gemm_precision;
    int64_t max_steps = 300;           // the step budget (the run ends sooner only by patience)
    int64_t epochs = 1000;             // upper bound; max_steps usually ends the run first
    double learning_rate = 1e-3;
    double weight_decay = 0.01;        // AdamW
    nn::ScheduleKind schedule = nn::ScheduleKind::Cosine;  // "constant", "linear", "cosine"
    int64_t warmup_steps = 30;
    double max_grad_norm = 1.0;        // 0: no clipping
    int64_t evaluate_every = 50;       // steps between validation evaluations (MRR@10); 0: none
    int64_t patience = 0;              // evaluations without improvement before stopping; 0: never

    // ---- where training starts ----
    std::string init;                  // a model checkpoint to start from (same kind and size); empty: fresh
    // Corpus pretraining before the pairs (retrieval/train/pretraining.h): steps of imitating
    // BM25 on pseudo-queries drawn from the corpus; -1: sized to the corpus; 0: none
    // (also --no-pretrain, and none when starting from --init).
    int64_t pretrain_steps = -1;
    int64_t pretrain_batch_size = 32;  // pseudo-queries per pretraining step
    int64_t pretrain_candidates = 4;   // BM25's top-k per pseudo-query, the teacher's candidates

    // ---- evaluation ----
    double bm25_k1 = 1.5;
    double bm25_b = 0.75;
    int64_t candidate_depth = 100;     // how many passages each ranking keeps (fusion works on these)
    int64_t encode_batch_size = 128;   // texts per forward pass when encoding
    int64_t top_k = 5;                 // `search`: results printed
    int64_t truncate_dim = 0;          // `index`: keep the embeddings' first N numbers (Matryoshka); 0: all

    // ---- the app's own settings ("app" in the config file), read by the app ----
    nlohmann::json app = nlohmann::json::object();
};

// vocab_size, max_query_length and max_passage_length at this value: the run sizes them to
// its data (data_sizes.h).
inline constexpr int64_t kSizedToData = -1;

// The max-pooled lexical vector's width a config asks for: lexical_dim, or 6 x d_model for 0,
// with a max-pooled head (max_pooled, both); 0 without one.
int64_t lexical_width(const RunConfig& config);
// Whether the config asks for the term-weight head (term_weights, both).
bool has_term_weights(const RunConfig& config);

// Every field as JSON under its own name.
nlohmann::json run_config_to_json(const RunConfig& config);
// Applies the keys of `json` onto `config` (keys absent keep their value). An unknown key or a
// wrong type throws nce::Error naming the key and `source` (a file name, or "--flag").
void apply_run_config_json(RunConfig& config, const nlohmann::json& json, const std::string& source);
// Throws nce::Error (one line naming the field, its value and what is allowed) unless every
// field is in range: positive sizes, fractions in [0, 1) summing below 1, known names.
void validate_run_config(const RunConfig& config);

// The command-line side: register once per subcommand, resolve after parsing.
class RunConfigOptions {
public:
    // Adds --config FILE and one flag per field of RunConfig to `command`; `defaults` gives
    // the values the help text shows and the starting point of resolve().
    void add_to(CLI::App& command, const RunConfig& defaults);
    // defaults <- the --config file <- the flags given; validated. Throws nce::Error on a
    // missing or malformed config file (naming it) or a bad value (naming the flag).
    RunConfig resolve() const;
    // For commands that work on a finished run (eval, index): like resolve(), but the run's
    // own config.json comes between the defaults and --config, so they take the seed, split,
    // data and lengths that train used:
    //   defaults <- the run's config.json <- --config file <- flags
    // The run's config.json is <output>/config.json, or, when there is none and `checkpoint`
    // is not empty, the one beside the checkpoint (a model evaluated from another run's folder).
    RunConfig resolve_over_run(const std::string& checkpoint) const;
    // Whether the flag for `field` ("data", "seed", ...) was given on the command line.
    bool given(const std::string& field) const;
    // Whether the user chose `field`: its flag, or its key in the --config file.
    bool chosen(const std::string& field) const;
    // --no-pretrain was given (resolve() then sets pretrain_steps to 0).
    bool no_pretrain() const { return no_pretrain_; }

private:
    // `base` <- the --config file <- the flags given; validated.
    RunConfig resolve_from(RunConfig base) const;

    RunConfig defaults_;
    std::string config_path_;
    std::map<std::string, std::string> values_;        // field -> text given on the command line
    std::map<std::string, CLI::Option*> options_;      // field -> its flag
    std::vector<std::string> loss_parameter_settings_; // "key=value"
    CLI::Option* loss_parameter_option_ = nullptr;
    bool no_pretrain_ = false;  // --no-pretrain
    bool checkpoint_activations_ = false;  // --checkpoint-activations
    bool lenient_ = false;      // --lenient: the data's bad records are counted and skipped (app.lenient)
};

// The files of a run, all inside `output`.
struct RunFiles {
    explicit RunFiles(const std::string& output);
    std::string output;           // the folder (created by create_output_folder)
    std::string config;           // config.json: the resolved RunConfig
    std::string tokenizer;        // tokenizer.model
    std::string model;            // model.safetensors: the trained (best) model
    std::string pretrained;       // pretrained.safetensors: the model after corpus pretraining
    std::string pretrain_log;     // pretrain_log.jsonl: its steps
    std::string best_checkpoint;  // training_best.safetensors: the trainer's best training checkpoint
    std::string last_checkpoint;  // training_last.safetensors
    std::string log;              // train_log.jsonl: the trainer's JSON-lines log
    std::string results;          // results.json: the metric table and the run's facts
    std::string split;            // split.json: the query ids of each split (train, validation, test)
    std::string curves_svg;       // training_curves.svg
    std::string metrics_svg;      // metrics.svg: the metric table as grouped bars
    std::string index;            // index/: the FAISS passage index (see passage_index.h)
    std::string model_card;       // README.md: what the run trained, on what, how well, how to use it
};

// Refuses an --output that exists and holds files but no nce run (no config.json of a run,
// nor compare/config.json): a run there would overwrite the user's own README.md or
// config.json. A new or empty folder, or a previous run's, passes. Writes nothing.
void check_output_folder(const std::string& output);
// Creates the output folder (and parents) and takes its lock (.nce-lock, flock: a second run
// into the same folder at the same time stops with one line; the kernel lets go when the
// process ends, however it ends); throws naming the folder when that fails or it is a file.
void create_output_folder(const std::string& output);
// Writes `text` to `path` through a temporary file beside it and a rename: readers see the
// old file or the whole new one, never half of one. Throws naming the path.
void write_text_file_atomically(const std::string& path, const std::string& text);
// Writes the resolved config as JSON (atomically).
void write_run_config(const std::string& path, const RunConfig& config);

}  // namespace nce::retrieval
