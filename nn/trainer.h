// The training loop the apps share.
//
// Each step:  zero the gradients -> the batch's loss (a callback) -> backward -> clip the
// gradient norm (optional) -> set the learning rate from the schedule -> optimizer step.
// Before the first step of a fresh run (unless evaluate_start is off) and then every
// `evaluate_every` steps a callback scores the model in eval mode (higher is better); an
// improvement saves the best checkpoint, and `patience` evaluations in a row without one
// stop the run. A loss that is NaN or infinite stops the run with an error naming the step,
// before that step touches the parameters or any checkpoint.
//
// Numbering: step 1 is the first optimizer step and epoch 1 the first epoch; the
// checkpoint's TrainingState counts what is done (step = steps taken, epoch = epochs
// completed). An epoch is `steps_per_epoch` batches; a step's batch is chosen by the
// callback from its StepPosition, so it must be a function of the position (shuffle each
// epoch with a Generator seeded from the epoch, not from a stream the run shares).
//
// Determinism and resume: everything random in a step (dropout) draws from the trainer's
// Generator, made from `seed`. A training checkpoint keeps the model, the optimizer's
// state, the step and epoch counters, the generator's seed and offset, the best metric and
// the evaluations since it; resume() restores all of them, so k steps, a checkpoint, and
// N - k more steps end bit-identical to N steps in one go.
#pragma once
#include <functional>
#include <optional>
#include <string>

#include "nn/checkpoint.h"
#include "nn/metrics_log.h"
#include "nn/model.h"
#include "nn/optimizer.h"
#include "nn/progress.h"
#include "nn/schedule.h"

namespace nce::nn {

struct TrainerOptions {
    int64_t epochs = 1;
    int64_t steps_per_epoch = 0;   // batches in one epoch (> 0)
    int64_t max_steps = 0;         // stop after this many steps in all, if sooner than the epochs end; 0: no limit
    uint64_t seed = 0;             // the trainer's Generator (dropout); a resumed run takes the checkpoint's
    std::optional<LearningRateSchedule> schedule;  // none: the optimizer's learning rate stays as it is
    double max_grad_norm = 0;      // clip the gradients' global L2 norm to this; 0: no clipping
    int64_t evaluate_every = 0;    // steps between evaluations; 0: no evaluation
    bool evaluate_start = true;    // with evaluate_every: score the start too, a candidate for the best
    int64_t patience = 0;          // stop after this many evaluations without improvement; 0: never
    std::string best_checkpoint_path;  // training checkpoint of the best evaluation; empty: not kept
    std::string last_checkpoint_path;  // training checkpoint every `checkpoint_every` steps and at the end; empty: none
    int64_t checkpoint_every = 0;      // 0: only at the end
    std::string metrics_log_path;      // JSON lines, one object per step and per evaluation; empty: none
    bool show_progress = true;         // the progress bar, drawn only when stderr is a terminal
    std::string progress_phase;        // named first on each progress line ("pretraining (training follows)")
    double following_steps = 0;        // the phases after this one, in this phase's steps (the run's ETA); 0: none
};

// Where a step stands: which batch the loss callback must compute.
struct StepPosition {
    int64_t step = 1;         // this step's number, from 1
    int64_t epoch = 1;        // its epoch's number, from 1
    int64_t batch_index = 0;  // the batch within the epoch, from 0 to steps_per_epoch - 1
};

// One batch's loss, as the loss callback returns it: either a scalar with a graph, which
// the trainer back-propagates, or (GradCache) the value of a loss whose gradients the
// callback has already accumulated into the parameters.
struct BatchLoss {
    Var loss;           // undefined when the gradients are ready
    double value = 0;   // the loss, when `loss` is undefined
    int64_t samples = 0;  // examples in the batch, for samples/s

    static BatchLoss with_graph(Var loss, int64_t samples) { return {std::move(loss), 0, samples}; }
    static BatchLoss gradients_ready(double value, int64_t samples) { return {Var(), value, samples}; }
};

// The loss of the batch at `position`; dropout draws from `generator` (the model is in
// training mode).
using BatchLossFunction = std::function<BatchLoss(const StepPosition& position, Generator& generator)>;
// A validation score of the model (in eval mode); higher is better, must be finite.
using EvaluationFunction = std::function<double(EmbeddingModel& model)>;

struct TrainingResult {
    int64_t steps = 0;        // steps taken in all, including those before a resume
    int64_t epochs = 0;       // epochs completed
    double last_loss = 0;     // the loss of the last step
    std::optional<double> best_metric;
    bool stopped_early = false;  // patience ran out
};

class Trainer {
public:
    // Checks the options (one line naming the option at fault). The model and optimizer
    // must outlive the trainer; the optimizer must hold the model's parameters.
    Trainer(EmbeddingModel& model, Optimizer& optimizer, TrainerOptions options);

    // Continues from a training checkpoint written by a trainer over the same kind of model
    // and optimizer: parameters, optimizer state, counters and generator come back.
    void resume(const std::string& checkpoint_path);

    // Trains until max_steps or the last epoch is done, patience runs out, or a loss is not
    // finite (an nce::Error naming the step and the last good checkpoint).
    TrainingResult fit(const BatchLossFunction& loss, const EvaluationFunction& evaluate = nullptr);

    // Writes a training checkpoint of the current state.
    void save_checkpoint(const std::string& path);

    const TrainingState& state() const { return state_; }
    Generator& generator() { return generator_; }
    // Steps the whole run takes when it is not stopped early.
    int64_t total_steps() const;

private:
    // Scores the model in eval mode, saves the best checkpoint on an improvement and logs
    // the result; returns true when patience has run out.
    bool evaluate_and_keep_best(const EvaluationFunction& evaluate, MetricsLog& log, ProgressBar& progress);

    EmbeddingModel& model_;
    Optimizer& optimizer_;
    TrainerOptions options_;
    Generator generator_;
    TrainingState state_;                    // step, epoch, best_metric; the rest is filled when saving
    int64_t evaluations_without_improvement_ = 0;
    std::string last_good_checkpoint_;       // the last checkpoint this trainer wrote or resumed from...
    int64_t last_good_checkpoint_step_ = 0;  // ...and the steps it holds
};

}  // namespace nce::nn
