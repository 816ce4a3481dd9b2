// How long a run will take, said before it starts: the plan line's estimate.
//
//   probe      one forward and backward of the model in training mode on up to 16 training
//              queries and 16 passage windows (their own lengths, as the run's batches will
//              have them), and one forward in eval mode on the same texts, timed: seconds per
//              query and per passage to train on, and to encode
//   phases     corpus pretraining   steps x (pseudo-queries + their candidate windows) to train on
//              training             steps x (queries + positives) to train on, plus every
//                                   validation: the validation texts to encode
//              evaluation           the test texts (passages as windows) to encode, once per
//                                   model row of the table, and the validation texts once more
//                                   (the hybrid's weight, the term share)
//
// The probe draws its dropout from a generator of its own and clears the gradients it made,
// so a run with the estimate computes the same numbers as one without. It is an estimate:
// the progress lines give each phase's ETA from its own steps as they go.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "data/split.h"
#include "data/tokenizer.h"
#include "nn/model.h"
#include "retrieval/settings/run_config.h"

namespace nce::retrieval {

// Seconds per text, from the probe.
struct TextCosts {
    double train_query = 0;    // forward and backward in training mode
    double train_passage = 0;
    double encode_query = 0;   // forward in eval mode, no graph
    double encode_passage = 0;
};

TextCosts probe_text_costs(nn::EmbeddingModel& model, const data::Tokenizer& tokenizer,
                           const std::vector<std::string>& queries, const std::vector<std::string>& passages,
                           const RunConfig& config);

// What each phase will do, in texts.
struct RunWork {
    int64_t pretraining_steps = 0;
    int64_t pretraining_candidates = 0;  // windows scored per pseudo-query
    int64_t training_steps = 0;
    int64_t validations = 0;             // evaluations during training
    int64_t validation_queries = 0;
    int64_t validation_windows = 0;
    int64_t test_queries = 0;
    int64_t test_windows = 0;
    int64_t evaluated_models = 0;        // rows of the table that encode the test texts
};

struct RunEstimate {
    double pretraining = 0;  // seconds
    double training = 0;
    double evaluation = 0;
    double total() const { return pretraining + training + evaluation; }
};

RunEstimate estimate_run(const TextCosts& costs, const RunWork& work, const RunConfig& config);

// "45 s", "6 min", "1 h 10 min": a duration as the plan line says it.
std::string rough_duration(double seconds);

}  // namespace nce::retrieval
