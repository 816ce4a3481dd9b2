#include "nn/memory_estimate.h"

#include <algorithm>
#include <fmt/format.h>

#include "engine/error.h"
#include "engine/machine_memory.h"

namespace nce::nn {

namespace {

// Values one encoder layer keeps per token of a text of `tokens` tokens (doubles: the sizes
// are checked by validate_config, but their products are only estimates and must not wrap).
double layer_values_per_token(const ModelConfig& config, double tokens) {
    return 8.0 * static_cast<double>(config.d_model) + 2.0 * static_cast<double>(config.dim_feedforward) +
           2.0 * static_cast<double>(config.nhead) * tokens;
}

// Values the graph keeps for `rows` texts of `tokens` tokens.
double activation_values(const ModelConfig& config, double rows, double tokens, bool checkpoint_activations) {
    const double d = static_cast<double>(config.d_model), layers = static_cast<double>(config.num_layers);
    const double one_layer = layer_values_per_token(config, tokens);
    const double layers_kept = checkpoint_activations ? layers * d + one_layer : layers * one_layer;
    const double per_token = 3.0 * d + layers_kept + 3.0 * static_cast<double>(config.lexical_dim);
    const double per_text = config.term_weights ? 3.0 * static_cast<double>(config.vocab_size) : 0.0;
    return rows * (tokens * per_token + per_text);
}

}  // namespace

MemoryEstimate estimate_training_memory(const ModelConfig& config, const TrainingBatchShape& batch,
                                        int64_t bytes_per_value) {
    const double bytes = static_cast<double>(bytes_per_value);
    MemoryEstimate estimate;
    estimate.model_bytes = 5.0 * static_cast<double>(parameter_count(config)) * bytes;
    const double longest = static_cast<double>(std::max(batch.query_tokens, batch.passage_tokens));
    const double transient = static_cast<double>(std::max(batch.query_rows, batch.passage_rows)) * longest *
                             layer_values_per_token(config, longest);  // the backward of one layer
    estimate.activation_bytes =
        bytes * (activation_values(config, static_cast<double>(batch.query_rows),
                                   static_cast<double>(batch.query_tokens), batch.checkpoint_activations) +
                 activation_values(config, static_cast<double>(batch.passage_rows),
                                   static_cast<double>(batch.passage_tokens), batch.checkpoint_activations) +
                 transient);
    return estimate;
}

void check_training_memory(const ModelConfig& config, const TrainingBatchShape& batch, const std::string& remedy,
                           int64_t bytes_per_value) {
    const MemoryEstimate estimate = estimate_training_memory(config, batch, bytes_per_value);
    const MemoryLimit limit = memory_limit();
    NCE_CHECK(estimate.total() <= static_cast<double>(limit.bytes),
              "training this model needs about {} (the model and its optimizer {}, activations {} for {} queries of {} "
              "tokens and {} passages of {}), more than {}; {}", format_bytes(estimate.total()),
              format_bytes(estimate.model_bytes), format_bytes(estimate.activation_bytes), batch.query_rows,
              batch.query_tokens, batch.passage_rows, batch.passage_tokens, limit.what, remedy);
}

}  // namespace nce::nn
