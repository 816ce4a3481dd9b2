#include "nn/trainer.h"

#include <chrono>
#include <charconv>
#include <cmath>
#include <limits>
#include <set>

#include "nn/clip_grad_norm.h"

namespace nce::nn {

namespace {

// The checkpoint metadata key for the patience counter (TrainingState has no field for it).
constexpr const char* kEvaluationsWithoutImprovementKey = "evaluations_without_improvement";

void check_options(const TrainerOptions& options) {
    NCE_CHECK(options.epochs >= 1, "trainer: epochs must be at least 1, got {}", options.epochs);
    NCE_CHECK(options.steps_per_epoch >= 1, "trainer: steps_per_epoch (the batches in one epoch) must be at least 1, got {}",
              options.steps_per_epoch);
    NCE_CHECK(options.max_steps >= 0, "trainer: max_steps must be >= 0 (0: no limit besides the epochs), got {}",
              options.max_steps);
    NCE_CHECK(std::isfinite(options.max_grad_norm) && options.max_grad_norm >= 0,
              "trainer: max_grad_norm must be a finite number >= 0 (0: no clipping), got {}", options.max_grad_norm);
    NCE_CHECK(options.evaluate_every >= 0, "trainer: evaluate_every must be >= 0 (0: no evaluation), got {}",
              options.evaluate_every);
    NCE_CHECK(options.patience >= 0, "trainer: patience must be >= 0 (0: never stop early), got {}", options.patience);
    NCE_CHECK(options.patience == 0 || options.evaluate_every > 0,
              "trainer: patience {} counts evaluations, but evaluate_every is 0; set evaluate_every > 0",
              options.patience);
    NCE_CHECK(options.checkpoint_every >= 0, "trainer: checkpoint_every must be >= 0 (0: only at the end), got {}",
              options.checkpoint_every);
    if (options.schedule) options.schedule->validate();
}

// Puts the model in eval mode for as long as it lives, then back in training mode.
class EvalMode {
public:
    explicit EvalMode(Module& model) : model_(model) { model_.train(false); }
    ~EvalMode() { model_.train(true); }
    EvalMode(const EvalMode&) = delete;
    EvalMode& operator=(const EvalMode&) = delete;

private:
    Module& model_;
};

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

Trainer::Trainer(EmbeddingModel& model, Optimizer& optimizer, TrainerOptions options)
    : model_(model), optimizer_(optimizer), options_(std::move(options)), generator_(options_.seed) {
    check_options(options_);
    std::set<const Var*> model_parameters;
    for (Var* parameter : model_.parameters()) model_parameters.insert(parameter);
    for (Var* parameter : optimizer_.parameters())
        NCE_CHECK(model_parameters.count(parameter) == 1,
                  "trainer: the optimizer updates a parameter that is not the model's; build the optimizer from "
                  "model.parameters()");
    state_.generator_seed = options_.seed;
}

int64_t Trainer::total_steps() const {
    int64_t all_epochs = 0;  // epochs x steps per epoch, saturating: a huge epoch count means "no limit", never a wrap
    if (__builtin_mul_overflow(options_.epochs, options_.steps_per_epoch, &all_epochs))
        all_epochs = std::numeric_limits<int64_t>::max();
    return options_.max_steps > 0 ? std::min(options_.max_steps, all_epochs) : all_epochs;
}

void Trainer::resume(const std::string& checkpoint_path) {
    TrainingState loaded = restore_training_checkpoint(checkpoint_path, model_);
    optimizer_.load_state(OptimizerState{loaded.step, loaded.optimizer_state});
    generator_ = Generator(loaded.generator_seed);
    generator_.set_offset(loaded.generator_offset);

    evaluations_without_improvement_ = 0;
    auto counter = loaded.metadata.find(kEvaluationsWithoutImprovementKey);
    if (counter != loaded.metadata.end()) {
        const std::string& text = counter->second;
        auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), evaluations_without_improvement_);
        NCE_CHECK(error == std::errc() && end == text.data() + text.size() && evaluations_without_improvement_ >= 0,
                  "trainer: '{}': metadata {} is '{}', not a count", checkpoint_path,
                  kEvaluationsWithoutImprovementKey, text);
    }
    loaded.optimizer_state.clear();  // the optimizer holds it now
    state_ = std::move(loaded);
    last_good_checkpoint_ = checkpoint_path;
    last_good_checkpoint_step_ = state_.step;
}

void Trainer::save_checkpoint(const std::string& path) {
    TrainingState saved = state_;
    saved.generator_seed = generator_.seed();
    saved.generator_offset = generator_.offset();
    saved.optimizer_state = optimizer_.state().tensors;
    saved.metadata[kEvaluationsWithoutImprovementKey] = std::to_string(evaluations_without_improvement_);
    save_training_checkpoint(path, model_, saved);
    last_good_checkpoint_ = path;
    last_good_checkpoint_step_ = state_.step;
}

bool Trainer::evaluate_and_keep_best(const EvaluationFunction& evaluate, MetricsLog& log, ProgressBar& progress) {
    double metric;
    {
        EvalMode eval_mode(model_);
        metric = evaluate(model_);
    }
    NCE_CHECK(std::isfinite(metric), "trainer: the evaluation after step {} returned {}; the metric must be finite",
              state_.step, metric);

    bool improved = !state_.best_metric || metric > *state_.best_metric;
    if (improved) {
        state_.best_metric = metric;
        evaluations_without_improvement_ = 0;
    } else {
        ++evaluations_without_improvement_;
    }
    if (improved && !options_.best_checkpoint_path.empty()) save_checkpoint(options_.best_checkpoint_path);
    bool out_of_patience = options_.patience > 0 && evaluations_without_improvement_ >= options_.patience;

    log.write({{"event", "eval"},
               {"step", state_.step},
               {"epoch", (state_.step - 1) / options_.steps_per_epoch + 1},
               {"metric", metric},
               {"best_metric", *state_.best_metric},
               {"improved", improved},
               {"evaluations_without_improvement", evaluations_without_improvement_}});
    progress.message(fmt::format("step {}: metric {:.6g} (best {:.6g}){}", state_.step, metric, *state_.best_metric,
                                 out_of_patience ? fmt::format(", no improvement in {} evaluations: stopping",
                                                               evaluations_without_improvement_)
                                                 : ""));
    return out_of_patience;
}

TrainingResult Trainer::fit(const BatchLossFunction& loss, const EvaluationFunction& evaluate) {
    NCE_CHECK(loss != nullptr, "trainer: no loss function given");
    NCE_CHECK(options_.evaluate_every == 0 || evaluate != nullptr,
              "trainer: evaluate_every is {} but no evaluation function was given", options_.evaluate_every);
    const int64_t total = total_steps();
    const int64_t steps_per_epoch = options_.steps_per_epoch;

    // A run that continues (after resume) appends to its log; a fresh one starts it anew.
    MetricsLog log = options_.metrics_log_path.empty() ? MetricsLog()
                                                       : MetricsLog(options_.metrics_log_path, state_.step > 0);
    ProgressBar progress(options_.show_progress);
    model_.train(true);

    TrainingResult result;
    auto start = std::chrono::steady_clock::now();
    int64_t steps_this_run = 0, samples_this_run = 0;
    bool stop = false;

    // The error for a NaN or infinite loss or gradient norm: nothing of this step reaches the
    // parameters, the optimizer or a checkpoint.
    auto fail_not_finite = [&](const char* what, double value, const StepPosition& position) {
        std::string kept = last_good_checkpoint_.empty()
                               ? std::string("no checkpoint was written yet")
                               : fmt::format("the last good checkpoint is '{}' (after step {})", last_good_checkpoint_,
                                             last_good_checkpoint_step_);
        std::string message = fmt::format("training: the {} is {} at step {} (epoch {}); stopped before that step "
                                          "changed the parameters; {}",
                                          what, value, position.step, position.epoch, kept);
        log.write({{"event", "error"}, {"step", position.step}, {"epoch", position.epoch}, {"message", message}});
        progress.finish();
        fail("{}", message);
    };

    // The starting parameters are a candidate too: scored before the first step, so a run whose
    // every step makes the metric worse (fine-tuning that forgets what pretraining taught)
    // keeps where it started as its best.
    if (options_.evaluate_every > 0 && options_.evaluate_start && state_.step == 0 && total > 0)
        stop = result.stopped_early = evaluate_and_keep_best(evaluate, log, progress);

    while (state_.step < total && !stop) {
        StepPosition position{state_.step + 1, state_.step / steps_per_epoch + 1, state_.step % steps_per_epoch};

        // Zero, loss, backward.
        model_.zero_grad();
        BatchLoss batch = loss(position, generator_);
        double loss_value = batch.value;
        if (batch.loss.defined()) {
            NCE_CHECK(batch.loss.value().numel() == 1 && batch.loss.requires_grad(),
                      "trainer: the loss at step {} has shape {}{}; return one value that depends on the parameters",
                      position.step, shape_string(batch.loss.shape()),
                      batch.loss.requires_grad() ? "" : " and no gradient");
            loss_value = batch.loss.value().item();
        }
        if (!std::isfinite(loss_value)) fail_not_finite("loss", loss_value, position);
        if (batch.loss.defined()) batch.loss.backward();

        // Clip.
        double gradient_norm = std::numeric_limits<double>::quiet_NaN();
        if (options_.max_grad_norm > 0) {
            gradient_norm = clip_grad_norm(optimizer_.parameters(), options_.max_grad_norm);
            if (!std::isfinite(gradient_norm)) fail_not_finite("gradient norm", gradient_norm, position);
        }

        // Learning rate for this step (a pure function of the steps taken), then the update.
        if (options_.schedule) optimizer_.set_learning_rate(options_.schedule->learning_rate(state_.step));
        double learning_rate = optimizer_.learning_rate();
        optimizer_.step();
        model_.clamp_temperature();  // log_tau back into the config's range, as CLIP does
        state_.step += 1;
        state_.epoch = state_.step / steps_per_epoch;
        result.last_loss = loss_value;

        // Report.
        steps_this_run += 1;
        samples_this_run += batch.samples;
        double elapsed = seconds_since(start);
        double samples_per_second = elapsed > 0 ? static_cast<double>(samples_this_run) / elapsed : 0;
        double seconds_remaining = elapsed / static_cast<double>(steps_this_run) * static_cast<double>(total - state_.step);
        nlohmann::json record = {{"event", "step"},
                                 {"step", position.step},
                                 {"epoch", position.epoch},
                                 {"loss", loss_value},
                                 {"lr", learning_rate},
                                 {"samples_per_second", samples_per_second}};
        if (options_.max_grad_norm > 0) record["grad_norm"] = gradient_norm;
        log.write(record);
        double seconds_after =
            options_.following_steps > 0 ? elapsed / static_cast<double>(steps_this_run) * options_.following_steps : -1;
        progress.update({state_.step, total, loss_value, learning_rate, samples_per_second, seconds_remaining,
                         options_.progress_phase, seconds_after});

        // Evaluate and checkpoint.
        if (options_.evaluate_every > 0 && state_.step % options_.evaluate_every == 0)
            stop = result.stopped_early = evaluate_and_keep_best(evaluate, log, progress);
        if (!options_.last_checkpoint_path.empty() && options_.checkpoint_every > 0 &&
            state_.step % options_.checkpoint_every == 0)
            save_checkpoint(options_.last_checkpoint_path);
    }
    if (!options_.last_checkpoint_path.empty() &&
        !(last_good_checkpoint_ == options_.last_checkpoint_path && last_good_checkpoint_step_ == state_.step))
        save_checkpoint(options_.last_checkpoint_path);
    progress.finish();

    result.steps = state_.step;
    result.epochs = state_.epoch;
    result.best_metric = state_.best_metric;
    return result;
}

}  // namespace nce::nn
