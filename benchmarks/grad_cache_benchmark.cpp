// GradCache against the plain step: peak memory and time of one training step of a small
// text encoder on B query-passage pairs with infonce_symmetric (in-batch negatives).
//
//   plain      encode all B queries and all B passages with one graph, the loss, backward:
//              every activation of 2·B sequences is alive at once.
//   GradCache  nn/grad_cache.h with mini-batches of m rows: a forward without a graph, the
//              loss's gradient w.r.t. the embeddings, then per mini-batch a forward with its
//              graph and a backward: activations of m sequences at a time, one more forward.
// Both then take one AdamW step, so "one training step" is zero_grad, loss, backward, step.
//
// Peak memory is the caching allocator's peak of bytes in use during the step (reset just
// before it): every tensor the step holds at once, parameters, gradients and optimizer state
// included. "step's own" subtracts what was in use before the step began (the parameters and
// the optimizer's moments), leaving what the step itself needed. Times are the median of
// several steps, plain and GradCache alternating, after one warm-up step of each.
//
// Usage: grad_cache_benchmark [--batch 1024] [--mini-batch 32] [--length 32] [--repeats 3]
// Threads come from NCE_NUM_THREADS (default: all cores).
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <vector>

#include "engine/nce.h"
#include "losses/infonce_symmetric.h"
#include "nn/grad_cache.h"
#include "nn/model.h"
#include "nn/optimizer.h"

namespace {

using namespace nce;

struct Settings {
    int64_t batch = 1024;
    int64_t mini_batch = 32;
    int64_t length = 32;
    int repeats = 3;
};

nn::ModelConfig small_text_encoder(int64_t length) {
    nn::ModelConfig config;
    config.kind = "text_encoder";
    config.vocab_size = 8000;
    config.max_len = length;
    config.d_model = 128;
    config.nhead = 4;
    config.dim_feedforward = 512;
    config.num_layers = 2;
    config.dropout = 0.1;
    return config;
}

// Token ids in [1, vocab) and masks keeping between length/2 and length tokens per row.
std::pair<Tensor, Tensor> random_tokens(int64_t rows, int64_t length, int64_t vocab_size, Generator& generator) {
    std::vector<int64_t> ids(rows * length), mask(rows * length, 0);
    for (int64_t& id : ids) id = 1 + generator.next_index(vocab_size - 1);
    for (int64_t r = 0; r < rows; ++r) {
        int64_t tokens = length / 2 + generator.next_index(length - length / 2 + 1);
        for (int64_t t = 0; t < tokens; ++t) mask[r * length + t] = 1;
    }
    return {Tensor::from_indices(ids, {rows, length}), Tensor::from_indices(mask, {rows, length})};
}

Var symmetric_infonce(const Var& q, const Var& p, const Var& log_tau) {
    return losses::infonce_symmetric(q, p, Var(), log_tau, 0.05);
}

// One step without GradCache: every activation of the whole batch is held at once.
double plain_step(nn::EmbeddingModel& model, nn::Optimizer& optimizer, const nn::PairBatch& batch,
                  Generator& generator) {
    model.zero_grad();
    Var q = model.encode(batch.query_input, batch.query_mask, &generator);        // [B, d]
    Var p = model.encode(batch.passage_input, batch.passage_mask, &generator);    // [B, d]
    Var loss = symmetric_infonce(q, p, Var());
    loss.backward();
    optimizer.step();
    return loss.value().item();
}

double grad_cache_training_step(nn::EmbeddingModel& model, nn::Optimizer& optimizer, const nn::PairBatch& batch,
                                int64_t mini_batch, Generator& generator) {
    model.zero_grad();
    double loss = nn::grad_cache_step(model, model, batch, symmetric_infonce, mini_batch, generator);
    optimizer.step();
    return loss;
}

struct Measurement {
    double median_seconds = 0;
    std::size_t peak_bytes = 0;       // the largest peak over the timed steps
    std::size_t step_own_bytes = 0;   // peak minus the bytes in use when the step began
    double loss = 0;
};

// Times `step` once, with the allocator's peak reset just before it.
void measure_once(const std::function<double()>& step, Measurement& measurement, std::vector<double>& seconds) {
    CachingAllocator& allocator = CachingAllocator::host();
    std::size_t in_use_before = allocator.stats().bytes_in_use;
    allocator.reset_peak();
    auto start = std::chrono::steady_clock::now();
    measurement.loss = step();
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    std::size_t peak = allocator.stats().peak_bytes_in_use;
    measurement.peak_bytes = std::max(measurement.peak_bytes, peak);
    measurement.step_own_bytes = std::max(measurement.step_own_bytes, peak - in_use_before);
}

double median(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    return values[values.size() / 2];
}

double mebibytes(std::size_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }

void run(const Settings& settings) {
    nn::ModelConfig config = small_text_encoder(settings.length);
    Generator init(7);
    auto model = nn::make_model(config, init, Dtype::Float32);
    model->train(true);
    nn::AdamW optimizer(model->parameters(), nn::AdamWOptions{.learning_rate = 1e-4});
    int64_t parameter_count = 0;
    for (Var* parameter : model->parameters()) parameter_count += parameter->value().numel();

    Generator data(11);
    auto [query_ids, query_mask] = random_tokens(settings.batch, settings.length, config.vocab_size, data);
    auto [passage_ids, passage_mask] = random_tokens(settings.batch, settings.length, config.vocab_size, data);
    nn::PairBatch batch{query_ids, query_mask, passage_ids, passage_mask};
    Generator dropout(99);

    fmt::print("grad_cache_benchmark: one training step (zero_grad, loss, backward, AdamW step)\n");
    fmt::print("batch B = {} pairs, GradCache mini-batch m = {}, loss infonce_symmetric (tau 0.05, in-batch negatives)\n",
               settings.batch, settings.mini_batch);
    fmt::print("model text_encoder: vocab {}, T {}, d_model {}, {} heads, ff {}, {} layers, dropout {}, float32, "
               "{} parameters\n",
               config.vocab_size, settings.length, config.d_model, config.nhead, config.dim_feedforward,
               config.num_layers, config.dropout, parameter_count);
    fmt::print("threads {} | OpenBLAS core {} | median of {} steps each (alternating) after 1 warm-up each\n\n",
               num_threads(), blas_core_name(), settings.repeats);

    auto plain = [&] { return plain_step(*model, optimizer, batch, dropout); };
    auto cached = [&] { return grad_cache_training_step(*model, optimizer, batch, settings.mini_batch, dropout); };
    plain();  // warm-up: the optimizer's moments exist from here on, the allocator's caches fill
    cached();
    Measurement plain_result, cached_result;
    std::vector<double> plain_seconds, cached_seconds;
    for (int r = 0; r < settings.repeats; ++r) {
        measure_once(plain, plain_result, plain_seconds);
        measure_once(cached, cached_result, cached_seconds);
    }
    plain_result.median_seconds = median(plain_seconds);
    cached_result.median_seconds = median(cached_seconds);

    fmt::print("| step                | seconds | peak MiB in use | step's own MiB | last loss |\n");
    fmt::print("|---------------------|--------:|----------------:|---------------:|----------:|\n");
    auto row = [](const char* name, const Measurement& m) {
        fmt::print("| {:<19} | {:>7.2f} | {:>15.1f} | {:>14.1f} | {:>9.4f} |\n", name, m.median_seconds,
                   mebibytes(m.peak_bytes), mebibytes(m.step_own_bytes), m.loss);
    };
    row("plain", plain_result);
    row(fmt::format("GradCache (m = {})", settings.mini_batch).c_str(), cached_result);
    fmt::print("| GradCache / plain   | {:>7.2f} | {:>15.3f} | {:>14.3f} |           |\n",
               cached_result.median_seconds / plain_result.median_seconds,
               static_cast<double>(cached_result.peak_bytes) / static_cast<double>(plain_result.peak_bytes),
               static_cast<double>(cached_result.step_own_bytes) / static_cast<double>(plain_result.step_own_bytes));
    fmt::print("\nThe losses differ slightly: with dropout on, encoding the batch whole or in mini-batches\n"
               "draws different masks (nn/grad_cache.h); tests/test_training.cpp proves the gradients equal.\n");
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app("GradCache vs the plain step: peak memory and time of one training step");
    Settings settings;
    app.add_option("--batch", settings.batch, "query-passage pairs per step")->check(CLI::PositiveNumber);
    app.add_option("--mini-batch", settings.mini_batch, "GradCache's mini-batch size m")->check(CLI::PositiveNumber);
    app.add_option("--length", settings.length, "tokens per sequence T")->check(CLI::Range(2, 512));
    app.add_option("--repeats", settings.repeats, "timed steps of each kind")->check(CLI::PositiveNumber);
    CLI11_PARSE(app, argc, argv);
    try {
        run(settings);
    } catch (const std::exception& error) {
        fmt::print(stderr, "grad_cache_benchmark: error: {}\n", error.what());
        return 1;
    }
    return 0;
}
