// Checkpoints: a model (and, for training, the optimizer and the run's progress) in one
// safetensors file.
//
// A model checkpoint holds every parameter under its state_dict name
// ("encoder.layers.0.linear1.weight", the names PyTorch gives the same model), and in the
// metadata:
//   nce_config      the ModelConfig as JSON: {"kind": "text_encoder", "d_model": 128, ...}
//   nce_checkpoint  "model" or "training"
// A PyTorch state_dict saved with the same names and an nce_config loads as it is
// (docs/checkpoints.md shows how).
//
// A training checkpoint adds the optimizer's tensors under "optimizer.<name>" and the run's
// counters in the metadata (nce_step, nce_epoch, nce_generator_seed, nce_generator_offset,
// nce_best_metric); load_model reads it like a model checkpoint.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "nn/model.h"

namespace nce::nn {

// ---- the configuration as JSON ----

// {"kind": ..., "in_dim": ..., ...}: every field of ModelConfig, under the same names.
std::string config_to_json(const ModelConfig& config);
// Reads the JSON written by config_to_json. The learnable-temperature keys are optional
// (default: no learnable temperature), and so are the prompts (default: none; at most
// ModelConfig::kMaxPromptBytes each); every other key is required, an unknown key is an
// error, and nesting deeper than 64 levels is refused before parsing. `source` names where
// the text came from, for messages.
ModelConfig config_from_json(const std::string& text, const std::string& source);

// ---- model checkpoints ----

// Writes every parameter in its own dtype, with nce_config and `extra_metadata` (keys
// starting with "nce_" are reserved).
void save_model(const std::string& path, EmbeddingModel& model,
                const std::map<std::string, std::string>& extra_metadata = {});

// Builds the model that nce_config describes and loads its parameters, converted from F32
// or F64 to `compute_dtype`. A parameter that is missing, has the wrong shape, or a tensor
// that is no parameter of the model is an error naming it. A log_tau tensor in the file
// means a learnable temperature, whatever nce_config says. Before anything is allocated the
// config must lie within the limits of model.h and need no more parameter values than the
// file's tensors hold.
std::unique_ptr<EmbeddingModel> load_model(const std::string& path, Dtype compute_dtype = Dtype::Float32);

// Copies `tensors` into the model's parameters, each converted to the parameter's dtype;
// the names must match the model's exactly. `source` names the file, for messages.
void load_parameters(EmbeddingModel& model, const std::map<std::string, Tensor>& tensors, const std::string& source);

// ---- training checkpoints ----

// What a training run needs, besides the model, to carry on where it stopped.
struct TrainingState {
    int64_t step = 0;                    // optimizer steps taken
    int64_t epoch = 0;                   // epochs completed
    uint64_t generator_seed = 0;         // the Generator behind dropout and shuffling...
    uint64_t generator_offset = 0;       // ...and how far it has drawn
    std::optional<double> best_metric;   // the best validation score so far, if any
    std::map<std::string, Tensor> optimizer_state;      // e.g. "exp_avg.encoder.linear.weight"
    std::map<std::string, std::string> metadata;        // anything else (keys not starting with "nce_")
};

void save_training_checkpoint(const std::string& path, EmbeddingModel& model, const TrainingState& state);

struct TrainingCheckpoint {
    std::unique_ptr<EmbeddingModel> model;
    TrainingState state;
};

// Builds the model (in `compute_dtype`) and reads the state. Optimizer tensors keep the
// dtype they were saved in.
TrainingCheckpoint load_training_checkpoint(const std::string& path, Dtype compute_dtype = Dtype::Float32);

// Resuming into a model that already exists: its config must equal the checkpoint's.
// Loads the parameters into `model` and returns the state.
TrainingState restore_training_checkpoint(const std::string& path, EmbeddingModel& model);

}  // namespace nce::nn
