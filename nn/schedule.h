// Learning-rate schedules: the learning rate as a pure function of the step, so a resumed
// run recomputes it from the step count alone and a schedule has no state to save.
//
// `step` counts the optimizer steps already taken: learning_rate(0) is the rate of the first
// update. Each loop iteration does
//     optimizer.set_learning_rate(schedule.learning_rate(optimizer.step_count()));
//     optimizer.step();
// which is how transformers' schedules run under LambdaLR (scheduler.step() after
// optimizer.step()); with warmup, the first update therefore has learning rate 0.
//
// The learning rate is base_learning_rate · multiplier(step), with transformers' formulas
// (get_constant_schedule_with_warmup, get_linear_schedule_with_warmup,
// get_cosine_schedule_with_warmup and, with a floor, get_cosine_with_min_lr_schedule_with_warmup):
//   warmup, step < warmup_steps:   step / warmup_steps
//   after it, with progress = (step - warmup_steps) / max(1, total_steps - warmup_steps):
//     constant:  1
//     linear:    max(0, 1 - progress)                   reaches 0 at total_steps
//     cosine:    min_ratio + (1 - min_ratio) · 0.5 · (1 + cos(pi · progress)),
//                min_ratio = min_learning_rate / base_learning_rate; reaches the floor at total_steps
// Past total_steps the cosine stays at its floor (transformers' would climb back up).
#pragma once
#include <cstdint>
#include <string>

namespace nce::nn {

enum class ScheduleKind { Constant, Linear, Cosine };

// "constant", "linear", "cosine"; anything else throws nce::Error listing these.
ScheduleKind schedule_kind_from_name(const std::string& name);
const char* schedule_kind_name(ScheduleKind kind);

struct LearningRateSchedule {
    ScheduleKind kind = ScheduleKind::Constant;
    double base_learning_rate = 1e-3;
    int64_t warmup_steps = 0;        // linear ramp from 0 up to the base rate; 0 = none
    int64_t total_steps = 0;         // linear and cosine: the step where the decay ends (>= warmup_steps)
    double min_learning_rate = 0.0;  // cosine: the floor it decays to (<= base_learning_rate)

    static LearningRateSchedule constant(double base_learning_rate, int64_t warmup_steps = 0);
    static LearningRateSchedule linear(double base_learning_rate, int64_t warmup_steps, int64_t total_steps);
    static LearningRateSchedule cosine(double base_learning_rate, int64_t warmup_steps, int64_t total_steps,
                                       double min_learning_rate = 0.0);

    // Throws nce::Error naming the field that is out of range.
    void validate() const;
    // The factor of base_learning_rate at `step` (>= 0).
    double multiplier(int64_t step) const;
    double learning_rate(int64_t step) const { return base_learning_rate * multiplier(step); }
};

}  // namespace nce::nn
