#include "retrieval/run/run_estimate.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fmt/format.h>

#include "engine/nce.h"
#include "retrieval/embedding/run_device.h"
#include "retrieval/model/text_model.h"

namespace nce::retrieval {

namespace {

constexpr size_t kProbeTexts = 16;

using ProbeClock = std::chrono::steady_clock;

double probe_seconds_since(ProbeClock::time_point start) {
    return std::chrono::duration<double>(ProbeClock::now() - start).count();
}

std::vector<std::string> first_texts(const std::vector<std::string>& texts) {
    return {texts.begin(), texts.begin() + static_cast<std::ptrdiff_t>(std::min(texts.size(), kProbeTexts))};
}

}  // namespace

TextCosts probe_text_costs(nn::EmbeddingModel& model, const data::Tokenizer& tokenizer,
                           const std::vector<std::string>& queries, const std::vector<std::string>& passages,
                           const RunConfig& config) {
    TextCosts costs;
    if (queries.empty() || passages.empty()) return costs;
    const data::EncodedBatch query_batch =
        tokenizer.encode(with_prompt(model.config().query_prompt, first_texts(queries)), config.max_query_length);
    const data::EncodedBatch passage_batch =
        tokenizer.encode(with_prompt(model.config().passage_prompt, first_texts(passages)), config.max_passage_length);
    const double query_rows = static_cast<double>(std::min(queries.size(), kProbeTexts));
    const double passage_rows = static_cast<double>(std::min(passages.size(), kProbeTexts));
    const bool was_training = model.training();
    Generator probe_dropout(0);  // the run's own generators are not drawn from

    model.train(true);
    auto start = ProbeClock::now();
    Var q = encode_on_model_device(model, query_batch, &probe_dropout);
    const double query_forward = probe_seconds_since(start);
    start = ProbeClock::now();
    Var p = encode_on_model_device(model, passage_batch, &probe_dropout);
    const double passage_forward = probe_seconds_since(start);
    start = ProbeClock::now();
    Var both = add(sum(q), sum(p));
    both.backward();
    both.value().to(Device::CPU);  // waits for a device to finish
    // The backward of each side, shared out by the forwards' times (a backward costs about
    // twice its forward in either).
    const double backward = probe_seconds_since(start);
    const double forward = std::max(query_forward + passage_forward, 1e-9);
    costs.train_query = (query_forward + backward * query_forward / forward) / query_rows;
    costs.train_passage = (passage_forward + backward * passage_forward / forward) / passage_rows;
    model.zero_grad();

    model.train(false);
    {
        NoGradGuard no_grad;
        start = ProbeClock::now();
        encode_on_model_device(model, query_batch, nullptr).value().to(Device::CPU);
        costs.encode_query = probe_seconds_since(start) / query_rows;
        start = ProbeClock::now();
        encode_on_model_device(model, passage_batch, nullptr).value().to(Device::CPU);
        costs.encode_passage = probe_seconds_since(start) / passage_rows;
    }
    model.train(was_training);
    return costs;
}

RunEstimate estimate_run(const TextCosts& costs, const RunWork& work, const RunConfig& config) {
    RunEstimate estimate;
    const auto steps = [](int64_t n) { return static_cast<double>(n); };
    const double encode_validation = steps(work.validation_queries) * costs.encode_query +
                                     steps(work.validation_windows) * costs.encode_passage;
    estimate.pretraining =
        steps(work.pretraining_steps) * steps(config.pretrain_batch_size) *
        (std::min(costs.train_query, costs.train_passage) +  // a pseudo-query is a few words
         steps(work.pretraining_candidates) * costs.train_passage);
    estimate.training = steps(work.training_steps) * steps(config.batch_size) *
                            (costs.train_query + costs.train_passage) +
                        steps(work.validations) * encode_validation;
    estimate.evaluation = steps(work.evaluated_models) * (steps(work.test_queries) * costs.encode_query +
                                                          steps(work.test_windows) * costs.encode_passage) +
                          encode_validation;
    return estimate;
}

std::string rough_duration(double seconds) {
    if (seconds < 90) return fmt::format("{:.0f} s", std::max(1.0, std::round(seconds)));
    const double minutes = std::round(seconds / 60);
    if (minutes < 60) return fmt::format("{:.0f} min", minutes);
    return fmt::format("{:.0f} h {:.0f} min", std::floor(minutes / 60), std::fmod(minutes, 60));
}

}  // namespace nce::retrieval
