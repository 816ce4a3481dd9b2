#include "nn/schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "engine/error.h"

namespace nce::nn {

ScheduleKind schedule_kind_from_name(const std::string& name) {
    if (name == "constant") return ScheduleKind::Constant;
    if (name == "linear") return ScheduleKind::Linear;
    if (name == "cosine") return ScheduleKind::Cosine;
    fail("schedule: unknown learning-rate schedule '{}'; use constant, linear or cosine", name);
}

const char* schedule_kind_name(ScheduleKind kind) {
    switch (kind) {
        case ScheduleKind::Constant: return "constant";
        case ScheduleKind::Linear: return "linear";
        case ScheduleKind::Cosine: return "cosine";
    }
    return "unknown";
}

LearningRateSchedule LearningRateSchedule::constant(double base_learning_rate, int64_t warmup_steps) {
    LearningRateSchedule schedule{.kind = ScheduleKind::Constant,
                                  .base_learning_rate = base_learning_rate,
                                  .warmup_steps = warmup_steps};
    schedule.validate();
    return schedule;
}

LearningRateSchedule LearningRateSchedule::linear(double base_learning_rate, int64_t warmup_steps,
                                                  int64_t total_steps) {
    LearningRateSchedule schedule{.kind = ScheduleKind::Linear,
                                  .base_learning_rate = base_learning_rate,
                                  .warmup_steps = warmup_steps,
                                  .total_steps = total_steps};
    schedule.validate();
    return schedule;
}

LearningRateSchedule LearningRateSchedule::cosine(double base_learning_rate, int64_t warmup_steps,
                                                  int64_t total_steps, double min_learning_rate) {
    LearningRateSchedule schedule{.kind = ScheduleKind::Cosine,
                                  .base_learning_rate = base_learning_rate,
                                  .warmup_steps = warmup_steps,
                                  .total_steps = total_steps,
                                  .min_learning_rate = min_learning_rate};
    schedule.validate();
    return schedule;
}

void LearningRateSchedule::validate() const {
    const char* kind_name = schedule_kind_name(kind);
    NCE_CHECK(std::isfinite(base_learning_rate) && base_learning_rate >= 0,
              "{} schedule: base learning rate {} is not a finite number >= 0", kind_name, base_learning_rate);
    NCE_CHECK(warmup_steps >= 0, "{} schedule: warmup_steps {} is negative", kind_name, warmup_steps);
    if (kind == ScheduleKind::Constant) return;
    NCE_CHECK(total_steps >= 1, "{} schedule: total_steps {} must be >= 1 (the step where the decay ends)", kind_name,
              total_steps);
    NCE_CHECK(warmup_steps <= total_steps,
              "{} schedule: warmup_steps {} exceed total_steps {}; use fewer warmup steps or train longer", kind_name,
              warmup_steps, total_steps);
    if (kind == ScheduleKind::Cosine)
        NCE_CHECK(min_learning_rate >= 0 && min_learning_rate <= base_learning_rate,
                  "cosine schedule: min_learning_rate {} must be in [0, base learning rate {}]", min_learning_rate,
                  base_learning_rate);
}

double LearningRateSchedule::multiplier(int64_t step) const {
    validate();
    NCE_CHECK(step >= 0, "{} schedule: step {} is negative", schedule_kind_name(kind), step);
    if (step < warmup_steps) return static_cast<double>(step) / static_cast<double>(warmup_steps);
    if (kind == ScheduleKind::Constant) return 1.0;

    const double decay_steps = static_cast<double>(std::max<int64_t>(1, total_steps - warmup_steps));
    // Linear, written as transformers does: (total_steps - step) / decay_steps = 1 - progress.
    if (kind == ScheduleKind::Linear) return std::max(0.0, static_cast<double>(total_steps - step) / decay_steps);

    // Cosine: from 1 at progress 0 down to min_ratio at progress 1, where it stays.
    const double progress = std::min(1.0, static_cast<double>(step - warmup_steps) / decay_steps);
    const double min_ratio = base_learning_rate > 0 ? min_learning_rate / base_learning_rate : 0.0;
    const double cosine = 0.5 * (1.0 + std::cos(std::numbers::pi * progress));
    return cosine * (1.0 - min_ratio) + min_ratio;
}

}  // namespace nce::nn
