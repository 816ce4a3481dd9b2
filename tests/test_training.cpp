// Training: GradCache against the plain step it replaces, and the trainer's promises
// (resume is bit-identical, early stopping keeps the best checkpoint, a NaN loss stops the
// run naming its step and leaves the last good checkpoint loadable, the log is JSON lines,
// a writer killed with SIGKILL mid-checkpoint leaves the last whole one, which resumes
// bit-identically).
//
// GradCache is proved by equality, not by plausibility: with dropout on, in float64, every
// parameter's gradient after one GradCache step equals the gradient of the plain step that
// encodes the same mini-batches in the same order with one graph (the reference is written
// here, from the model's encode and the loss; see nn/grad_cache.h for why that is the step
// with the same dropout masks), for infonce and infonce_symmetric, both model kinds, shared
// and two towers. With dropout off it also equals encoding the whole batch in one call.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <thread>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "losses/infonce.h"
#include "losses/infonce_symmetric.h"
#include "nn/checkpoint.h"
#include "nn/grad_cache.h"
#include "nn/optimizer.h"
#include "nn/progress.h"
#include "nn/trainer.h"
#include "tests/test_helpers.h"

using namespace nce;
using namespace nce::nn;
using namespace nce::testing;

namespace {

// ---- tiny models and batches ----

ModelConfig tiny_config(const std::string& kind, double dropout, bool learnable_temperature) {
    ModelConfig config;
    config.kind = kind;
    if (kind == "sig_predictor") {
        config.in_dim = 5;
    } else {
        config.vocab_size = 23;
        config.max_len = 7;
    }
    config.out_dim = 6;
    config.d_model = 8;
    config.nhead = 2;
    config.dim_feedforward = 16;
    config.num_layers = 2;
    config.dropout = dropout;
    config.learnable_temperature = learnable_temperature;
    return config;
}

// Inputs for `rows` rows of at most `length` tokens: features or token ids, and a mask whose
// row r keeps between 1 and `length` tokens.
std::pair<Tensor, Tensor> random_inputs(const ModelConfig& config, int64_t rows, int64_t length, Generator& generator,
                                        Dtype dtype) {
    std::vector<int64_t> mask(rows * length, 0);
    for (int64_t r = 0; r < rows; ++r) {
        int64_t tokens = 1 + generator.next_index(length);
        for (int64_t t = 0; t < tokens; ++t) mask[r * length + t] = 1;
    }
    Tensor input;
    if (config.kind == "sig_predictor") {
        input = generator.normal({rows, length, config.in_dim}, dtype);
    } else {
        std::vector<int64_t> ids(rows * length);
        for (int64_t& id : ids) id = generator.next_index(config.vocab_size);
        input = Tensor::from_indices(ids, {rows, length});
    }
    return {input, Tensor::from_indices(mask, {rows, length})};
}

PairBatch random_batch(const ModelConfig& config, int64_t rows, Generator& generator, Dtype dtype) {
    auto [query_input, query_mask] = random_inputs(config, rows, 5, generator, dtype);
    auto [passage_input, passage_mask] = random_inputs(config, rows, 7, generator, dtype);
    return {query_input, query_mask, passage_input, passage_mask};
}

EmbeddingLoss infonce_loss() {
    return [](const Var& q, const Var& p, const Var& log_tau) { return losses::infonce(q, p, Var(), log_tau, 0.1); };
}
EmbeddingLoss infonce_symmetric_loss() {
    return [](const Var& q, const Var& p, const Var& log_tau) {
        return losses::infonce_symmetric(q, p, Var(), log_tau, 0.1);
    };
}

Var temperature_of(EmbeddingModel& query_model, EmbeddingModel& passage_model) {
    Var* log_tau = query_model.log_tau() != nullptr ? query_model.log_tau() : passage_model.log_tau();
    return log_tau != nullptr ? *log_tau : Var();
}

// The plain step GradCache must equal: every mini-batch embedded with its graph, in
// GradCache's order (the queries' mini-batches, then the passages'), from one generator,
// and the loss on the concatenation. mini_batch_size >= B is the whole batch in one call.
Var plain_step_loss(EmbeddingModel& query_model, EmbeddingModel& passage_model, const PairBatch& batch,
                    const EmbeddingLoss& loss, int64_t mini_batch_size, Generator& generator) {
    auto embed_in_order = [&](EmbeddingModel& model, const Tensor& input, const Tensor& mask) {
        std::vector<Var> parts;
        for (int64_t begin = 0; begin < input.size(0); begin += mini_batch_size) {
            int64_t end = std::min(begin + mini_batch_size, input.size(0));
            parts.push_back(model.encode(slice(input, 0, begin, end), slice(mask, 0, begin, end), &generator));
        }
        return concat(parts, 0);
    };
    Var q_embeddings = embed_in_order(query_model, batch.query_input, batch.query_mask);
    Var p_embeddings = embed_in_order(passage_model, batch.passage_input, batch.passage_mask);
    return loss(q_embeddings, p_embeddings, temperature_of(query_model, passage_model));
}

// Every parameter's gradient (zeros where none arrived), by name.
std::vector<std::pair<std::string, Tensor>> gradients(Module& model) {
    std::vector<std::pair<std::string, Tensor>> out;
    for (auto& [name, parameter] : model.named_parameters())
        out.emplace_back(name, parameter->grad().defined() ? parameter->grad() : zeros_like(parameter->value()));
    return out;
}

double relative_difference(const Tensor& a, const Tensor& b) {
    return max_abs_difference(a, b) / std::max(max_abs(b), 1e-300);
}

void check_same_gradients(Module& model, Module& reference, double tolerance) {
    auto got = gradients(model), expected = gradients(reference);
    REQUIRE(got.size() == expected.size());
    for (size_t k = 0; k < got.size(); ++k) {
        INFO("parameter " << got[k].first);
        REQUIRE(got[k].first == expected[k].first);
        CHECK(max_abs(expected[k].second) > 0);  // a gradient reached it: the comparison means something
        CHECK(relative_difference(got[k].second, expected[k].second) < tolerance);
    }
}

// Two towers made the same way from the same seed, so their parameters are identical.
struct Towers {
    std::unique_ptr<EmbeddingModel> query, passage;  // passage is null for a shared tower
    EmbeddingModel& query_model() { return *query; }
    EmbeddingModel& passage_model() { return passage ? *passage : *query; }
};

Towers make_towers(const ModelConfig& config, bool shared, uint64_t seed) {
    Generator init(seed);
    Towers towers;
    towers.query = make_model(config, init, Dtype::Float64);
    if (!shared) {
        ModelConfig passage_config = config;
        passage_config.learnable_temperature = false;  // the temperature is the query tower's
        towers.passage = make_model(passage_config, init, Dtype::Float64);
    }
    return towers;
}

}  // namespace

TEST_CASE("grad_cache: every gradient equals the plain step's to 1e-10 in float64, with dropout on") {
    struct LossCase {
        const char* name;
        EmbeddingLoss loss;
    };
    const LossCase loss_cases[] = {{"infonce", infonce_loss()}, {"infonce_symmetric", infonce_symmetric_loss()}};
    // B rows in mini-batches of m: uneven (6 = 4 + 2), one row each, even halves.
    const std::pair<int64_t, int64_t> batch_shapes[] = {{6, 4}, {5, 1}, {4, 2}};

    for (const LossCase& loss_case : loss_cases)
        for (const char* kind : {"sig_predictor", "text_encoder"})
            for (bool shared : {true, false})
                for (bool learnable_temperature : {true, false})
                    for (auto [rows, mini_batch_size] : batch_shapes) {
                        INFO(loss_case.name << " " << kind << (shared ? ", shared tower" : ", two towers")
                                            << (learnable_temperature ? ", learnable tau" : ", fixed tau")
                                            << ", B=" << rows << " m=" << mini_batch_size);
                        ModelConfig config = tiny_config(kind, 0.3, learnable_temperature);
                        Generator data(11);
                        PairBatch batch = random_batch(config, rows, data, Dtype::Float64);

                        Towers reference = make_towers(config, shared, 5);
                        Generator reference_dropout(99);
                        Var loss = plain_step_loss(reference.query_model(), reference.passage_model(), batch,
                                                   loss_case.loss, mini_batch_size, reference_dropout);
                        loss.backward();

                        Towers cached = make_towers(config, shared, 5);
                        Generator cached_dropout(99);
                        double cached_loss = grad_cache_step(cached.query_model(), cached.passage_model(), batch,
                                                             loss_case.loss, mini_batch_size, cached_dropout);

                        CHECK(reference_dropout.offset() > 0);  // dropout drew masks
                        CHECK(cached_dropout.offset() == reference_dropout.offset());
                        CHECK(std::abs(cached_loss - loss.value().item()) <= 1e-12 * std::abs(loss.value().item()));
                        check_same_gradients(cached.query_model(), reference.query_model(), 1e-10);
                        if (!shared) check_same_gradients(cached.passage_model(), reference.passage_model(), 1e-10);
                    }
}

TEST_CASE("grad_cache: without dropout it equals encoding the whole batch at once") {
    for (const char* kind : {"sig_predictor", "text_encoder"}) {
        INFO(kind);
        ModelConfig config = tiny_config(kind, 0.0, true);
        Generator data(3);
        PairBatch batch = random_batch(config, 7, data, Dtype::Float64);

        Towers whole = make_towers(config, true, 8);
        Generator unused(1);
        Var loss = plain_step_loss(whole.query_model(), whole.passage_model(), batch, infonce_symmetric_loss(), 7, unused);
        loss.backward();

        Towers cached = make_towers(config, true, 8);
        grad_cache_step(cached.query_model(), cached.passage_model(), batch, infonce_symmetric_loss(), 3, unused);
        check_same_gradients(cached.query_model(), whole.query_model(), 1e-10);
    }
}

TEST_CASE("grad_cache: gradients accumulate on top of earlier ones, like any backward") {
    ModelConfig config = tiny_config("sig_predictor", 0.2, false);
    Generator data(4);
    PairBatch batch = random_batch(config, 4, data, Dtype::Float64);
    Towers once = make_towers(config, true, 2), twice = make_towers(config, true, 2);
    Generator dropout_once(6), dropout_twice(6);
    grad_cache_step(once.query_model(), once.passage_model(), batch, infonce_loss(), 3, dropout_once);
    dropout_twice.set_offset(0);
    grad_cache_step(twice.query_model(), twice.passage_model(), batch, infonce_loss(), 3, dropout_twice);
    dropout_twice.set_offset(0);
    grad_cache_step(twice.query_model(), twice.passage_model(), batch, infonce_loss(), 3, dropout_twice);
    for (auto& [name, parameter] : once.query_model().named_parameters()) {
        INFO(name);
        Var* doubled = nullptr;
        for (auto& [other_name, other] : twice.query_model().named_parameters())
            if (other_name == name) doubled = other;
        REQUIRE(doubled != nullptr);
        CHECK(max_abs_difference(doubled->grad(), parameter->grad() * 2.0) <= 1e-12 * max_abs(parameter->grad()));
    }
}

TEST_CASE("grad_cache: bad input is one clear error") {
    ModelConfig config = tiny_config("sig_predictor", 0.1, false);
    Generator data(1);
    PairBatch batch = random_batch(config, 4, data, Dtype::Float64);
    Towers towers = make_towers(config, true, 1);
    Generator dropout(2);
    CHECK_ERROR_MENTIONS(grad_cache_step(towers.query_model(), towers.passage_model(), batch, infonce_loss(), 0, dropout),
                         "mini-batch size must be at least 1, got 0");
    PairBatch short_mask = batch;
    short_mask.passage_mask = slice(batch.passage_mask, 0, 0, 3);
    CHECK_ERROR_MENTIONS(
        grad_cache_step(towers.query_model(), towers.passage_model(), short_mask, infonce_loss(), 2, dropout),
        "the passage mask has shape [3, 7] but the passage input has shape [4, 7, 5]");
    EmbeddingLoss vector_loss = [](const Var& q, const Var& p, const Var&) { return sum(q * p, 1); };
    CHECK_ERROR_MENTIONS(grad_cache_step(towers.query_model(), towers.passage_model(), batch, vector_loss, 2, dropout),
                         "the loss must return one value, got shape [4]");
}

// ---- the trainer ----

namespace {

namespace fs = std::filesystem;

// A tiny retrieval problem: 16 pairs, batches of 4, so an epoch is 4 steps. Each epoch
// visits the pairs in an order drawn from a Generator seeded by the epoch alone, so a
// batch is a function of its position (what a resumed run needs).
struct TinyProblem {
    static constexpr int64_t kPairs = 16;
    static constexpr int64_t kBatchRows = 4;
    ModelConfig config;
    PairBatch pairs;
    Dtype dtype;

    TinyProblem(Dtype dtype_) : config(tiny_config("sig_predictor", 0.2, true)), dtype(dtype_) {
        Generator data(21);
        pairs = random_batch(config, kPairs, data, dtype);
    }

    PairBatch batch_at(const StepPosition& position) const {
        Generator shuffle(1000 + static_cast<uint64_t>(position.epoch));
        std::vector<int64_t> order(kPairs);
        for (int64_t i = 0; i < kPairs; ++i) order[i] = i;
        for (int64_t i = kPairs - 1; i > 0; --i) std::swap(order[i], order[shuffle.next_index(i + 1)]);
        std::vector<int64_t> rows(order.begin() + position.batch_index * kBatchRows,
                                  order.begin() + (position.batch_index + 1) * kBatchRows);
        Tensor index = Tensor::from_indices(rows, {kBatchRows});
        return {index_select(pairs.query_input, index), index_select(pairs.query_mask, index),
                index_select(pairs.passage_input, index), index_select(pairs.passage_mask, index)};
    }

    // The loss callback: a plain step with one graph, or a GradCache step (m = 3).
    BatchLossFunction loss_function(EmbeddingModel& model, bool use_grad_cache) const {
        return [this, &model, use_grad_cache](const StepPosition& position, Generator& generator) {
            PairBatch batch = batch_at(position);
            if (use_grad_cache)
                return BatchLoss::gradients_ready(
                    grad_cache_step(model, model, batch, infonce_symmetric_loss(), 3, generator), kBatchRows);
            Var q = model.encode(batch.query_input, batch.query_mask, &generator);
            Var p = model.encode(batch.passage_input, batch.passage_mask, &generator);
            return BatchLoss::with_graph(infonce_symmetric_loss()(q, p, *model.log_tau()), kBatchRows);
        };
    }
};

struct Run {
    std::unique_ptr<EmbeddingModel> model;
    std::unique_ptr<AdamW> optimizer;
    std::unique_ptr<Trainer> trainer;
};

// A model initialised from `init_seed`, AdamW, clipping on, and a schedule that warms up
// for 2 steps (by default a linear decay that reaches 0 at step 10).
Run make_run(const TinyProblem& problem, uint64_t init_seed, TrainerOptions options,
             LearningRateSchedule schedule = LearningRateSchedule::linear(1e-2, 2, 10)) {
    Run run;
    Generator init(init_seed);
    run.model = make_model(problem.config, init, problem.dtype);
    run.optimizer = std::make_unique<AdamW>(run.model->parameters(), AdamWOptions{.learning_rate = 1e-2});
    options.steps_per_epoch = TinyProblem::kPairs / TinyProblem::kBatchRows;
    options.schedule = schedule;
    options.max_grad_norm = 0.5;
    options.show_progress = false;
    run.trainer = std::make_unique<Trainer>(*run.model, *run.optimizer, options);
    return run;
}

std::vector<Tensor> parameter_values(Module& model) {
    std::vector<Tensor> values;
    for (Var* parameter : model.parameters()) values.push_back(parameter->value().clone());
    return values;
}

// Every parameter equal to the last bit.
void check_bit_identical(const std::vector<Tensor>& got, const std::vector<Tensor>& expected) {
    REQUIRE(got.size() == expected.size());
    for (size_t k = 0; k < got.size(); ++k) {
        INFO("parameter " << k);
        CHECK(got[k].to_vector() == expected[k].to_vector());
    }
}

std::vector<nlohmann::json> read_json_lines(const std::string& path) {
    std::ifstream file(path);
    std::vector<nlohmann::json> records;
    std::string line;
    while (std::getline(file, line)) {
        INFO("line: " << line);
        REQUIRE(nlohmann::json::accept(line));
        records.push_back(nlohmann::json::parse(line));
        CHECK(records.back().is_object());
    }
    return records;
}

}  // namespace

TEST_CASE("trainer: k steps, a checkpoint, and N - k more are bit-identical to N steps in one go") {
    // The evaluation before step 1 scores 0 and those after steps 2, 4, 6 score 1/step: none
    // better than step 2's, so with patience 2 the run stops after step 6 of 8. The
    // interrupted run stops after step 5, between the evaluations, so the resumed one must
    // carry the best metric and the patience count across the checkpoint to stop at the same step.
    for (Dtype dtype : kFloatDtypes)
        for (bool use_grad_cache : {false, true}) {
            INFO(dtype_name(dtype) << (use_grad_cache ? " with GradCache" : " plain steps"));
            TinyProblem problem(dtype);
            TemporaryDirectory directory;
            TrainerOptions options;
            options.epochs = 2;  // 8 steps, crossing an epoch boundary after step 4
            options.seed = 77;
            options.evaluate_every = 2;
            options.patience = 2;
            Trainer* trainer = nullptr;  // the one being run, for its step count
            EvaluationFunction score = [&trainer](EmbeddingModel&) {
                int64_t step = trainer->state().step;
                return step == 0 ? 0.0 : 1.0 / double(step);
            };

            Run uninterrupted = make_run(problem, 3, options);
            trainer = uninterrupted.trainer.get();
            TrainingResult whole =
                uninterrupted.trainer->fit(problem.loss_function(*uninterrupted.model, use_grad_cache), score);
            CHECK(whole.steps == 6);
            CHECK(whole.stopped_early);

            TrainerOptions first_part = options;
            first_part.max_steps = 5;  // stops inside the second epoch, after 3 evaluations
            first_part.last_checkpoint_path = directory.file("last.safetensors");
            Run interrupted = make_run(problem, 3, first_part);
            trainer = interrupted.trainer.get();
            TrainingResult part =
                interrupted.trainer->fit(problem.loss_function(*interrupted.model, use_grad_cache), score);
            CHECK(part.steps == 5);
            CHECK_FALSE(part.stopped_early);

            // Fresh objects, initialised differently, so everything must come from the checkpoint.
            Run resumed = make_run(problem, 12345, options);
            resumed.trainer->resume(first_part.last_checkpoint_path);
            CHECK(resumed.trainer->state().step == 5);
            trainer = resumed.trainer.get();
            TrainingResult rest = resumed.trainer->fit(problem.loss_function(*resumed.model, use_grad_cache), score);
            CHECK(rest.steps == 6);
            CHECK(rest.stopped_early);
            CHECK(rest.last_loss == whole.last_loss);
            CHECK(rest.best_metric == whole.best_metric);
            CHECK(resumed.trainer->generator().offset() == uninterrupted.trainer->generator().offset());
            check_bit_identical(parameter_values(*resumed.model), parameter_values(*uninterrupted.model));
            CHECK(uninterrupted.trainer->generator().offset() > 0);  // dropout drew masks
        }
}

TEST_CASE("trainer: early stopping after `patience` evaluations without improvement keeps the best checkpoint") {
    TinyProblem problem(Dtype::Float64);
    TemporaryDirectory directory;
    TrainerOptions options;
    options.epochs = 5;  // 20 steps unless stopped
    options.evaluate_every = 2;
    options.patience = 3;
    options.best_checkpoint_path = directory.file("best.safetensors");
    Run run = make_run(problem, 4, options);

    // Evaluations before step 1 and at steps 2, 4, 6, ...: the best is the third (step 4);
    // three more without improvement (steps 6, 8, 10) stop the run after step 10.
    std::vector<double> metrics{0.0, 0.1, 0.4, 0.3, 0.4, 0.2, 0.9, 0.9, 0.9};
    size_t evaluations = 0;
    std::vector<Tensor> parameters_at_best;
    auto evaluate = [&](EmbeddingModel& model) {
        CHECK_FALSE(model.training());  // evaluated in eval mode
        double metric = metrics.at(evaluations++);
        if (evaluations == 3) parameters_at_best = parameter_values(model);
        return metric;
    };
    TrainingResult result = run.trainer->fit(problem.loss_function(*run.model, false), evaluate);
    CHECK(run.model->training());  // back in training mode
    CHECK(result.stopped_early);
    CHECK(evaluations == 6);
    CHECK(result.steps == 10);
    REQUIRE(result.best_metric.has_value());
    CHECK(*result.best_metric == 0.4);

    TrainingCheckpoint best = load_training_checkpoint(options.best_checkpoint_path, Dtype::Float64);
    CHECK(best.state.step == 4);
    CHECK(best.state.best_metric == 0.4);
    check_bit_identical(parameter_values(*best.model), parameters_at_best);

    // Without patience the same metrics never stop the run.
    TrainerOptions patient = options;
    patient.patience = 0;
    patient.epochs = 2;
    patient.best_checkpoint_path.clear();
    Run full = make_run(problem, 4, patient);
    evaluations = 0;
    TrainingResult all_steps = full.trainer->fit(problem.loss_function(*full.model, false), evaluate);
    CHECK_FALSE(all_steps.stopped_early);
    CHECK(all_steps.steps == 8);
}

TEST_CASE("trainer: when every step makes the metric worse, the best checkpoint is where the run started") {
    // Fine-tuning that forgets what pretraining taught: the evaluation before step 1 is the
    // best, and the best checkpoint holds the starting parameters.
    TinyProblem problem(Dtype::Float64);
    TemporaryDirectory directory;
    TrainerOptions options;
    options.epochs = 2;  // 8 steps
    options.evaluate_every = 2;
    options.best_checkpoint_path = directory.file("best.safetensors");
    Run run = make_run(problem, 4, options);
    std::vector<Tensor> at_start = parameter_values(*run.model);
    std::vector<double> metrics{0.8, 0.5, 0.6, 0.7, 0.3};
    size_t evaluations = 0;
    EvaluationFunction next_metric = [&](EmbeddingModel&) { return metrics.at(evaluations++); };
    TrainingResult result = run.trainer->fit(problem.loss_function(*run.model, false), next_metric);
    CHECK(evaluations == 5);  // before step 1, after steps 2, 4, 6, 8
    CHECK(result.steps == 8);
    CHECK(*result.best_metric == 0.8);
    TrainingCheckpoint best = load_training_checkpoint(options.best_checkpoint_path, Dtype::Float64);
    CHECK(best.state.step == 0);
    check_bit_identical(parameter_values(*best.model), at_start);
    CHECK(max_abs_difference(parameter_values(*run.model)[0], at_start[0]) > 0);  // the run itself moved on

    // With evaluate_start off (compare: each loss against a shared start) only trained
    // parameters are candidates: the best is step 6's 0.7.
    TrainerOptions trained_only = options;
    trained_only.evaluate_start = false;
    trained_only.best_checkpoint_path = directory.file("best_trained.safetensors");
    Run second = make_run(problem, 4, trained_only);
    evaluations = 1;  // the same metrics, without the start's
    TrainingResult from_step_2 = second.trainer->fit(problem.loss_function(*second.model, false), next_metric);
    CHECK(evaluations == 5);
    CHECK(*from_step_2.best_metric == 0.7);
    CHECK(load_training_checkpoint(trained_only.best_checkpoint_path, Dtype::Float64).state.step == 6);
}

TEST_CASE("trainer: a NaN loss at step 3 stops the run naming step 3; the last good checkpoint stays loadable") {
    for (bool use_grad_cache : {false, true}) {
        INFO((use_grad_cache ? "GradCache" : "plain steps"));
        TinyProblem problem(Dtype::Float64);
        TemporaryDirectory directory;
        TrainerOptions options;
        options.epochs = 2;
        options.checkpoint_every = 1;
        options.last_checkpoint_path = directory.file("last.safetensors");
        options.metrics_log_path = directory.file("metrics.jsonl");
        Run run = make_run(problem, 5, options);

        BatchLossFunction good = problem.loss_function(*run.model, use_grad_cache);
        std::vector<Tensor> parameters_after_step_2;
        BatchLossFunction nan_at_step_3 = [&](const StepPosition& position, Generator& generator) {
            if (position.step == 3) parameters_after_step_2 = parameter_values(*run.model);
            BatchLoss loss = good(position, generator);
            if (position.step != 3) return loss;
            double nan = std::numeric_limits<double>::quiet_NaN();
            return use_grad_cache ? BatchLoss::gradients_ready(nan, loss.samples)
                                  : BatchLoss::with_graph(loss.loss * nan, loss.samples);
        };
        CHECK_ERROR_MENTIONS(run.trainer->fit(nan_at_step_3), "the loss is nan at step 3 (epoch 1)");
        CHECK_ERROR_MENTIONS(run.trainer->fit(nan_at_step_3), "the last good checkpoint is '" +
                                                                  options.last_checkpoint_path + "' (after step 2)");

        // The failed step changed nothing, and the checkpoint holds the state after step 2.
        check_bit_identical(parameter_values(*run.model), parameters_after_step_2);
        TrainingCheckpoint last = load_training_checkpoint(options.last_checkpoint_path, Dtype::Float64);
        CHECK(last.state.step == 2);
        check_bit_identical(parameter_values(*last.model), parameters_after_step_2);

        // The log records steps 1 and 2, then the error (twice: fit ran twice).
        std::vector<nlohmann::json> records = read_json_lines(options.metrics_log_path);
        REQUIRE(records.size() == 4);
        CHECK(records[2]["event"] == "error");
        CHECK(records[2]["step"] == 3);
    }
}

TEST_CASE("trainer: the metrics log has one JSON object per step and per evaluation") {
    TinyProblem problem(Dtype::Float32);
    TemporaryDirectory directory;
    TrainerOptions options;
    options.epochs = 2;
    options.evaluate_every = 3;
    options.metrics_log_path = directory.file("metrics.jsonl");
    Run run = make_run(problem, 6, options);
    double next_metric = 0;
    run.trainer->fit(problem.loss_function(*run.model, false), [&](EmbeddingModel&) { return next_metric += 1; });

    std::vector<nlohmann::json> records = read_json_lines(options.metrics_log_path);
    REQUIRE(records.size() == 8 + 3);  // 8 steps, evaluations before step 1 and after steps 3 and 6
    int64_t step = 0;
    LearningRateSchedule schedule = LearningRateSchedule::linear(1e-2, 2, 10);
    for (const nlohmann::json& record : records) {
        INFO(record.dump());
        if (record["event"] == "step") {
            ++step;
            CHECK(record["step"] == step);
            CHECK(record["epoch"] == (step - 1) / 4 + 1);
            CHECK(std::isfinite(record["loss"].get<double>()));
            CHECK(record["lr"].get<double>() == schedule.learning_rate(step - 1));
            CHECK(record["samples_per_second"].get<double>() >= 0);
            CHECK(record["grad_norm"].get<double>() >= 0);
        } else {
            CHECK(record["event"] == "eval");
            CHECK(record["step"] == step);
            CHECK(step % 3 == 0);
            CHECK(record["metric"] == static_cast<double>(step / 3 + 1));
            CHECK(record["best_metric"] == record["metric"]);
            CHECK(record["improved"] == true);
        }
    }
    CHECK(step == 8);
}

TEST_CASE("trainer: bad options are one clear error") {
    TinyProblem problem(Dtype::Float32);
    Generator init(1);
    auto model = make_model(problem.config, init, Dtype::Float32);
    AdamW optimizer(model->parameters());
    TrainerOptions options;
    CHECK_ERROR_MENTIONS(Trainer(*model, optimizer, options), "steps_per_epoch (the batches in one epoch) must be at least 1");
    options.steps_per_epoch = 4;
    options.patience = 2;
    CHECK_ERROR_MENTIONS(Trainer(*model, optimizer, options), "patience 2 counts evaluations, but evaluate_every is 0");
    options.patience = 0;
    options.max_grad_norm = -1;
    CHECK_ERROR_MENTIONS(Trainer(*model, optimizer, options), "max_grad_norm must be a finite number >= 0");
    options.max_grad_norm = 0;
    options.evaluate_every = 2;
    Trainer trainer(*model, optimizer, options);
    CHECK_ERROR_MENTIONS(trainer.fit(problem.loss_function(*model, false)), "evaluate_every is 2 but no evaluation function");
    options.metrics_log_path = "/nonexistent-directory/metrics.jsonl";
    options.evaluate_every = 0;
    Trainer logging(*model, optimizer, options);
    CHECK_ERROR_MENTIONS(logging.fit(problem.loss_function(*model, false)), "cannot open '/nonexistent-directory/metrics.jsonl'");
}

// epochs x steps per epoch saturates: 2^63 - 1 epochs once wrapped to a negative step count,
// trained 0 steps and saved the untrained model as the trained one.
TEST_CASE("trainer: a huge epoch count is no limit, never a wrapped step count") {
    TinyProblem problem(Dtype::Float64);
    TrainerOptions options;
    options.epochs = std::numeric_limits<int64_t>::max();
    options.max_steps = 3;
    Run run = make_run(problem, 4, options);
    CHECK(run.trainer->total_steps() == 3);
    options.max_steps = 0;
    Run unbounded = make_run(problem, 4, options);
    CHECK(unbounded.trainer->total_steps() == std::numeric_limits<int64_t>::max());
}

TEST_CASE("progress: durations and the bar's line") {
    CHECK(format_duration(42) == "42s");
    CHECK(format_duration(192) == "3m12s");
    CHECK(format_duration(3720) == "1h02m");
    CHECK(format_duration(-1) == "?");
    ProgressState state{5, 20, 1.23456, 1e-4, 512.4, 75};
    CHECK(format_progress(state, 8) == "step 5/20 [##------]  loss 1.2346  lr 1.00e-04  512 samples/s  ETA 1m15s");
    CHECK(format_progress_line(state, 41) ==
          "progress: step 5/20  loss 1.2346  lr 1.00e-04  512 samples/s  elapsed 41s  ETA 1m15s");
    // A run of several phases names the one the line is about.
    state.phase = "pretraining (training follows)";
    CHECK(format_progress_line(state, 41) == "progress: pretraining (training follows): step 5/20  loss 1.2346  lr "
                                             "1.00e-04  512 samples/s  elapsed 41s  ETA 1m15s");
    CHECK(format_progress(state, 8).rfind("pretraining (training follows): step 5/20 [##------]", 0) == 0);
    // With the phases after it estimated, the line adds the whole run's ETA.
    state.seconds_after = 385;
    CHECK(format_progress_line(state, 41) == "progress: pretraining (training follows): step 5/20  loss 1.2346  lr "
                                             "1.00e-04  512 samples/s  elapsed 41s  ETA 1m15s  run ETA ~7m40s");
    CHECK(format_progress(state, 8).find("ETA 1m15s  run ETA ~7m40s") != std::string::npos);
}

// Without a terminal (stderr is a file here) the bar prints plain lines at its interval: every
// update at 0 ms, none within 10 s, none when disabled.
TEST_CASE("progress: without a terminal, one plain line per interval") {
    TemporaryDirectory scratch;
    const std::string path = (scratch.path / "stderr.txt").string();
    std::fflush(stderr);
    int saved = dup(fileno(stderr));
    REQUIRE(std::freopen(path.c_str(), "w", stderr) != nullptr);
    ProgressState state{1, 3, 0.5, 1e-3, 10, 2};
    {
        ProgressBar every_time(true, std::chrono::milliseconds(0));
        CHECK(!every_time.active());
        for (int64_t step = 1; step <= 3; ++step) {
            state.step = step;
            every_time.update(state);
        }
        ProgressBar seldom(true, std::chrono::seconds(10)), off(false, std::chrono::milliseconds(0));
        seldom.update(state);
        off.update(state);
    }
    std::fflush(stderr);
    dup2(saved, fileno(stderr));
    close(saved);
    std::ifstream file(path);
    std::vector<std::string> lines;
    for (std::string line; std::getline(file, line);) lines.push_back(line);
    REQUIRE(lines.size() == 3);
    CHECK(lines[0].rfind("progress: step 1/3  loss 0.5000", 0) == 0);
    CHECK(lines[2].rfind("progress: step 3/3", 0) == 0);
}

// CLIP's rule: the temperature parameter is clamped after each optimizer step, and its
// gradient flows. Step 1 shoves log_tau far below log(min_temperature) (a gradient of 100 at a
// learning rate of 1); without the clamp it would sit below the losses' floor (tau < 1e-4),
// where infonce holds tau constant and dL/dlog_tau = 0, and no later step could move it.
// Steps 2-4 are an infonce whose loss falls as tau rises (each query scores the other's
// positive higher than its own), so log_tau must climb back up from the clamp.
TEST_CASE("trainer: a learnable temperature pushed below min_temperature is clamped back, and its gradient flows") {
    ModelConfig config = tiny_config("sig_predictor", 0.0, /*learnable_temperature=*/true);
    Generator init(3);
    auto model = make_model(config, init, Dtype::Float64);
    Var* log_tau = model->log_tau();
    REQUIRE(log_tau != nullptr);
    SGDOptions sgd_options;
    sgd_options.learning_rate = 1.0;
    SGD optimizer({log_tau}, sgd_options);
    TrainerOptions options;
    options.steps_per_epoch = 4;
    options.show_progress = false;
    Trainer trainer(*model, optimizer, options);

    Var q(Tensor::from_vector({1, 0, 0, 1}, {2, 2}, Dtype::Float64));
    Var p(Tensor::from_vector({0, 1, 1, 0}, {2, 2}, Dtype::Float64));
    std::vector<double> after_step;
    auto loss = [&](const StepPosition& position, Generator&) {
        if (position.step > 1) after_step.push_back(log_tau->value().item());
        // At tau = 0.01 infonce's dL/dlog_tau is about -100; scaled so that steps stay below log(max_temperature).
        Var value = position.step == 1 ? sum(*log_tau * 100.0) : losses::infonce(q, p, Var(), *log_tau) * 0.001;
        return BatchLoss::with_graph(value, 2);
    };
    trainer.fit(loss);
    after_step.push_back(log_tau->value().item());

    REQUIRE(after_step.size() == 4);
    CHECK(after_step[0] == doctest::Approx(std::log(config.min_temperature)).epsilon(1e-15));  // clamped, not -100
    for (size_t k = 1; k < after_step.size(); ++k) CHECK(after_step[k] > after_step[k - 1]);    // and climbing
    CHECK(temperature(*model) == doctest::Approx(std::exp(after_step.back())));
}

// ---- kill -9 while checkpoints are written ----
//
// A real crash, not a simulated one. A writer process (this binary started again, running
// only the writer test case) trains with a checkpoint after every step, so it spends most of
// its time writing one, and is killed with SIGKILL: after seeded random delays, and after
// polling until its temporary `<checkpoint>.tmp-<pid>` exists, which is the moment between
// the first byte written and the rename. After each kill the checkpoint at the path must
// load and hold exactly the uninterrupted run's state at its step (so no half-written file
// took its place), and a resume from it in this process must stay bit-identical to that run.
// The next writer resumes from it with the killed writer's temporary lying beside it, and
// must remove that temporary (write_safetensors clears the stale temporaries of its path).
// The last writer runs to the end, bit-identical to the run that was never interrupted.

namespace {

// Set in a writer's environment to the checkpoint path; the writer test case does nothing
// without it.
constexpr const char* kKillTestCheckpointVariable = "NCE_KILL_TEST_CHECKPOINT";
constexpr const char* kKillTestWriterName = "trainer: the kill test's checkpoint writer (runs only when spawned by it)";
constexpr int64_t kKillTestSteps = 400;
constexpr uint64_t kKillTestInitSeed = 3;
constexpr Dtype kKillTestDtype = Dtype::Float32;

// The run the writers and the reference take, to `max_steps`. After its warmup the learning
// rate stays at 1e-2, so every step moves the parameters (make_run's default decays to 0 by
// step 10, after which a resumed run would agree with any other trivially). An empty
// `checkpoint` writes none.
Run make_kill_test_run(const TinyProblem& problem, uint64_t init_seed, int64_t max_steps,
                       const std::string& checkpoint) {
    TrainerOptions options;
    options.epochs = kKillTestSteps;  // enough: max_steps ends the run
    options.max_steps = max_steps;
    options.seed = 77;
    options.last_checkpoint_path = checkpoint;
    options.checkpoint_every = checkpoint.empty() ? 0 : 1;
    return make_run(problem, init_seed, options, LearningRateSchedule::constant(1e-2, 2));
}

// A writer: this test binary started afresh with posix_spawn (a fork would copy oneTBB's
// state into the child but none of its worker threads, so the child's parallel work could
// hang), selecting only the writer test case, its output appended to `log`. A writer still running when this object goes
// (a failed REQUIRE) is killed and reaped, so none outlives the test.
class WriterProcess {
public:
    WriterProcess(const std::string& checkpoint, const std::string& log) {
        std::string executable = fs::read_symlink("/proc/self/exe").string();
        std::vector<std::string> arguments = {executable, std::string("--test-case=") + kKillTestWriterName};
        std::vector<std::string> environment = {std::string(kKillTestCheckpointVariable) + "=" + checkpoint};
        // The rest of this process's environment, NCE_NUM_THREADS included: the same thread count.
        for (char** variable = environ; *variable != nullptr; ++variable) environment.emplace_back(*variable);
        std::vector<char*> argv = null_terminated(arguments), envp = null_terminated(environment);

        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
        posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
        int error = posix_spawn(&pid_, executable.c_str(), &actions, nullptr, argv.data(), envp.data());
        posix_spawn_file_actions_destroy(&actions);
        REQUIRE_MESSAGE(error == 0, "posix_spawn " << executable << ": " << std::strerror(error));
    }
    ~WriterProcess() {
        if (running()) kill_and_reap();
    }
    WriterProcess(const WriterProcess&) = delete;
    WriterProcess& operator=(const WriterProcess&) = delete;

    pid_t pid() const { return pid_; }
    // Whether it has not exited yet; reaps it (keeping its status) once it has.
    bool running() {
        if (!reaped_ && ::waitpid(pid_, &status_, WNOHANG) == pid_) reaped_ = true;
        return !reaped_;
    }
    int wait() {
        if (!reaped_ && ::waitpid(pid_, &status_, 0) == pid_) reaped_ = true;
        return status_;
    }
    int kill_and_reap() {
        if (!reaped_) ::kill(pid_, SIGKILL);
        return wait();
    }

private:
    static std::vector<char*> null_terminated(std::vector<std::string>& strings) {
        std::vector<char*> pointers;
        for (std::string& text : strings) pointers.push_back(text.data());
        pointers.push_back(nullptr);
        return pointers;
    }

    pid_t pid_ = -1;
    int status_ = 0;
    bool reaped_ = false;
};

bool file_exists(const std::string& path) {
    std::error_code ignored;
    return fs::exists(path, ignored);
}

// Which file a path names and when it was last written: a rename into place or a write in
// place changes it.
std::tuple<ino_t, int64_t, int64_t, off_t> file_stamp(const std::string& path) {
    struct stat status {};
    if (::stat(path.c_str(), &status) != 0) return {0, 0, 0, -1};
    return {status.st_ino, status.st_mtim.tv_sec, status.st_mtim.tv_nsec, status.st_size};
}

// Polls without sleeping (a whole checkpoint write can take well under a millisecond) until
// `done()`; false when the writer exits first or a minute passes.
template <typename Condition>
bool wait_for(WriterProcess& writer, const Condition& done) {
    auto give_up = std::chrono::steady_clock::now() + std::chrono::minutes(1);
    while (!done())
        if (!writer.running() || std::chrono::steady_clock::now() > give_up) return false;
    return true;
}

std::string file_text(const std::string& path) {
    std::ifstream file(path);
    return std::string(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
}

}  // namespace

// The writer's part of the next test case; the ordinary test run finds no variable and
// passes at once.
TEST_CASE(kKillTestWriterName) {
    const char* checkpoint = std::getenv(kKillTestCheckpointVariable);
    if (checkpoint == nullptr) return;
    TinyProblem problem(kKillTestDtype);
    Run run = make_kill_test_run(problem, kKillTestInitSeed, kKillTestSteps, checkpoint);
    if (file_exists(checkpoint)) run.trainer->resume(checkpoint);  // as a restarted job carries on
    run.trainer->fit(problem.loss_function(*run.model, false));
}

TEST_CASE("trainer: kill -9 during checkpoint writes leaves the last complete checkpoint; resuming it is bit-identical") {
    // Each kill comes after a seeded random delay; every third one then waits for a write to
    // be under way and kills at once.
    constexpr int kKills = 18;
    TinyProblem problem(kKillTestDtype);

    // The uninterrupted run, and its parameters after every step: after_step[s].
    std::vector<std::vector<Tensor>> after_step(kKillTestSteps + 1);
    {
        Run reference = make_kill_test_run(problem, kKillTestInitSeed, kKillTestSteps, "");
        BatchLossFunction loss = problem.loss_function(*reference.model, false);
        reference.trainer->fit([&](const StepPosition& position, Generator& generator) {
            after_step[position.step - 1] = parameter_values(*reference.model);
            return loss(position, generator);
        });
        after_step[kKillTestSteps] = parameter_values(*reference.model);
    }

    TemporaryDirectory directory;
    const std::string checkpoint = directory.file("last.safetensors");
    const std::string log = directory.file("writers.log");

    // A writer's pace here (a step and a checkpoint write, mostly fsync), so that the random
    // delays span a few of its steps on any machine and kill it long before its last step.
    auto pace_start = std::chrono::steady_clock::now();
    constexpr int64_t kPaceSteps = 10;
    {
        Run pace = make_kill_test_run(problem, kKillTestInitSeed, kPaceSteps, directory.file("pace.safetensors"));
        pace.trainer->fit(problem.loss_function(*pace.model, false));
    }
    // Every checkpoint of this run is about this long (only a few digits of metadata differ).
    const off_t complete_size = std::get<3>(file_stamp(directory.file("pace.safetensors")));
    REQUIRE(complete_size > 4096);
    fs::remove(directory.file("pace.safetensors"));
    auto step_microseconds = std::chrono::duration_cast<std::chrono::microseconds>(
                                 std::chrono::steady_clock::now() - pace_start).count() / kPaceSteps;
    auto temporary_of = [&](pid_t pid) { return checkpoint + ".tmp-" + std::to_string(pid); };
    auto temporaries_left = [&] {  // their names, separated by spaces
        std::string names;
        for (const auto& entry : fs::directory_iterator(directory.path))
            if (entry.path().filename().string().find(".tmp-") != std::string::npos)
                names += (names.empty() ? "" : " ") + entry.path().filename().string();
        return names;
    };

    Generator delays(2024);
    int kills = 0, kills_during_write = 0, polled_kills = 0, polled_kills_during_write = 0;
    int64_t last_step = 0;
    for (int trial = 0; trial < kKills; ++trial) {
        bool polled = trial % 3 == 2;
        auto stamp_before = file_stamp(checkpoint);
        WriterProcess writer(checkpoint, log);
        const std::string temporary = temporary_of(writer.pid());
        auto temporary_exists = [&] { return file_exists(temporary); };
        // A write under way: the writer's temporary is there, or the checkpoint at the path is
        // shorter than a whole one (a writer writing in place, which the rename is there to prevent).
        auto writing = [&] {
            off_t size = std::get<3>(file_stamp(checkpoint));
            return temporary_exists() || (size >= 0 && size < complete_size - 4096);
        };
        // Its first write has begun (after startup and the resume), so the delay runs while it
        // trains. The checkpoint's stamp counts too, so that a writer writing in place is caught
        // by the checks below rather than waited for here; one that exits is judged by its status.
        bool started = wait_for(writer, [&] { return temporary_exists() || file_stamp(checkpoint) != stamp_before; });
        REQUIRE_MESSAGE((started || !writer.running()), "writer " << writer.pid() << " wrote no checkpoint in a minute");
        std::this_thread::sleep_for(std::chrono::microseconds(delays.next_index(8 * step_microseconds + 1)));
        if (polled)
            REQUIRE_MESSAGE((wait_for(writer, writing) || !writer.running()),
                            "writer " << writer.pid() << " wrote nothing for a minute");
        int status = writer.kill_and_reap();
        // Reaching the last step first is no fault, only a sign that this machine got much
        // faster than its pace said: the kills end there, and the checks after the loop run.
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0) break;
        REQUIRE_MESSAGE((WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL),
                        "writer " << writer.pid() << " failed (status " << status << "):\n" << file_text(log));
        bool temporary_left = temporary_exists(), during_write = writing();
        ++kills;
        polled_kills += polled;
        kills_during_write += during_write;
        polled_kills_during_write += polled && during_write;
        std::string which_kill = fmt::format("kill {} ({}), {}", kills, polled ? "polled" : "after a random delay",
                                             during_write ? "during a write" : "between writes");
        INFO(which_kill);

        // Only this writer's temporary may be left: it removed those of the writers killed before.
        CHECK(temporaries_left() == (temporary_left ? fs::path(temporary).filename().string() : ""));

        // Killed in its first write with no checkpoint before it: there is still none (its
        // temporary is not taken for one), and the next writer starts afresh.
        if (!file_exists(checkpoint)) {
            CHECK(last_step == 0);
            continue;
        }
        // The checkpoint at the path is a whole one: the uninterrupted run's state at its step.
        std::optional<TrainingCheckpoint> loaded;
        try {
            loaded.emplace(load_training_checkpoint(checkpoint, kKillTestDtype));
        } catch (const Error& error) {
            FAIL("the checkpoint left by the kill does not load: " << std::string(error.what()));
        }
        int64_t step = loaded->state.step;
        CHECK(step >= last_step);
        last_step = step;
        check_bit_identical(parameter_values(*loaded->model), after_step[step]);

        // Resumed here, a few more steps stay on the uninterrupted run's path, bit for bit.
        int64_t target = std::min<int64_t>(step + 3, kKillTestSteps);
        Run resumed = make_kill_test_run(problem, 12345, target, "");
        resumed.trainer->resume(checkpoint);
        resumed.trainer->fit(problem.loss_function(*resumed.model, false));
        check_bit_identical(parameter_values(*resumed.model), after_step[target]);
        if (step == kKillTestSteps) break;  // killed after its last write: nothing is left to kill
    }

    // The last writer resumes beside the last kill's leftover and runs to the end.
    WriterProcess last_writer(checkpoint, log);
    int status = last_writer.wait();
    REQUIRE_MESSAGE((WIFEXITED(status) && WEXITSTATUS(status) == 0), "the last writer failed:\n" << file_text(log));
    CHECK(temporaries_left() == "");
    TrainingCheckpoint finished = load_training_checkpoint(checkpoint, kKillTestDtype);
    CHECK(finished.state.step == kKillTestSteps);
    check_bit_identical(parameter_values(*finished.model), after_step[kKillTestSteps]);

    MESSAGE(kills << " kills, " << kills_during_write << " during a write (" << polled_kills_during_write
                  << " of the " << polled_kills << " polled); the checkpoints reached step " << last_step
                  << "; a step took " << step_microseconds << " us");
    CHECK(kills >= kKills / 2);
    CHECK(polled_kills_during_write >= 1);
}
