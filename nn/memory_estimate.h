// What a training step of a model will hold in memory, estimated from its config and the
// batch before anything is allocated, and the refusal when that cannot fit (engine/machine_memory.h):
//
//   model      parameters x (value, gradient, AdamW's two moments) + a second copy of the values
//              (the untrained or best model a run keeps beside the one it trains)
//   activations, per text of T tokens (the float tensors the graph keeps for the backward):
//              embeddings           3 d                          per token
//              each layer           8 d + 2 ff + 2 H T           (q, k, v, the attention's softmax and its
//                                                                  dropout, projections, norms, residuals,
//                                                                  the feed-forward's two halves)
//              a max-pooled head    3 lexical_dim                per token
//              the term weights     3 vocab_size                 per text (the vocabulary-wide vector)
//              with activation checkpointing, each layer keeps only its input (d per token) and
//              one layer is recomputed at a time
//   total      model + activations of the queries' and the passages' texts + one layer's worth for
//              the backward's transients
//
// It is an estimate: a measured peak lies within a factor of about two (docs/checkpoints.md gives
// the measurements), so the refusal is for what is clearly out of reach, not for a close call.
#pragma once
#include <cstdint>
#include <string>

#include "nn/model.h"

namespace nce::nn {

struct TrainingBatchShape {
    int64_t query_rows = 0;    // texts of query_tokens tokens per forward (a GradCache chunk, or the batch)
    int64_t query_tokens = 0;
    int64_t passage_rows = 0;  // texts of passage_tokens tokens per forward
    int64_t passage_tokens = 0;
    bool checkpoint_activations = false;
};

struct MemoryEstimate {
    double model_bytes = 0;
    double activation_bytes = 0;
    double total() const { return model_bytes + activation_bytes; }
};

MemoryEstimate estimate_training_memory(const ModelConfig& config, const TrainingBatchShape& batch,
                                        int64_t bytes_per_value = 4);

// Throws nce::Error, one line with the estimate, the limit it exceeds (the machine's memory, a
// container's or a ulimit) and `remedy` (which settings lower it, in the caller's terms), when
// the estimate is above what memory_limit() leaves.
void check_training_memory(const ModelConfig& config, const TrainingBatchShape& batch, const std::string& remedy,
                           int64_t bytes_per_value = 4);

}  // namespace nce::nn
