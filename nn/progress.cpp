#include "nn/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace nce::nn {

std::string format_duration(double seconds) {
    if (!(seconds >= 0) || !std::isfinite(seconds)) return "?";
    auto total = static_cast<int64_t>(std::llround(seconds));
    int64_t hours = total / 3600, minutes = total % 3600 / 60, rest = total % 60;
    if (hours > 0) return fmt::format("{}h{:02}m", hours, minutes);
    if (minutes > 0) return fmt::format("{}m{:02}s", minutes, rest);
    return fmt::format("{}s", rest);
}

namespace {

// "  run ETA ~7m40s" when the phases after this one are estimated, else nothing.
std::string run_eta(const ProgressState& state) {
    if (state.seconds_after < 0 || state.seconds_remaining < 0) return "";
    return "  run ETA ~" + format_duration(state.seconds_remaining + state.seconds_after);
}

}  // namespace

std::string format_progress(const ProgressState& state, int width) {
    double fraction = state.total_steps > 0 ? static_cast<double>(state.step) / static_cast<double>(state.total_steps) : 0;
    int filled = static_cast<int>(std::clamp(fraction, 0.0, 1.0) * width);
    std::string bar = std::string(filled, '#') + std::string(width - filled, '-');
    return fmt::format("{}step {}/{} [{}]  loss {:.4f}  lr {:.2e}  {:.0f} samples/s  ETA {}{}",
                       state.phase.empty() ? "" : state.phase + ": ", state.step,
                       state.total_steps, bar, state.loss, state.learning_rate, state.samples_per_second,
                       format_duration(state.seconds_remaining), run_eta(state));
}

std::string format_progress_line(const ProgressState& state, double elapsed_seconds) {
    return fmt::format("progress: {}step {}/{}  loss {:.4f}  lr {:.2e}  {:.0f} samples/s  elapsed {}  ETA {}{}",
                       state.phase.empty() ? "" : state.phase + ": ", state.step,
                       state.total_steps, state.loss, state.learning_rate, state.samples_per_second,
                       format_duration(elapsed_seconds), format_duration(state.seconds_remaining), run_eta(state));
}

ProgressBar::ProgressBar(bool enabled, std::chrono::milliseconds plain_every)
    : active_(enabled && isatty(fileno(stderr)) == 1),
      plain_(enabled && !active_),
      plain_every_(plain_every),
      start_(std::chrono::steady_clock::now()),
      last_plain_(start_) {}

ProgressBar::~ProgressBar() { finish(); }

void ProgressBar::clear_line() {
    if (drawn_) std::fputs("\r\033[K", stderr);  // carriage return, erase to the end of the line
}

void ProgressBar::update(const ProgressState& state) {
    auto now = std::chrono::steady_clock::now();
    if (plain_ && now - last_plain_ >= plain_every_) {
        std::fprintf(stderr, "%s\n",
                     format_progress_line(state, std::chrono::duration<double>(now - start_).count()).c_str());
        std::fflush(stderr);
        last_plain_ = now;
    }
    if (!active_) return;
    bool last_step = state.step >= state.total_steps;
    if (drawn_ && !last_step && now - last_draw_ < std::chrono::milliseconds(100)) return;
    last_line_ = format_progress(state);
    clear_line();
    std::fputs(last_line_.c_str(), stderr);
    std::fflush(stderr);
    drawn_ = true;
    last_draw_ = now;
}

void ProgressBar::message(const std::string& line) {
    if (!active_) return;
    clear_line();
    std::fprintf(stderr, "%s\n", line.c_str());
    if (drawn_) std::fputs(last_line_.c_str(), stderr);
    std::fflush(stderr);
}

void ProgressBar::finish() {
    if (!active_ || !drawn_) return;
    std::fputs("\n", stderr);
    std::fflush(stderr);
    drawn_ = false;
}

}  // namespace nce::nn
