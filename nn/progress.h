// A one-line progress bar for training, redrawn in place on stderr:
//
//   step 120/1000 [###-------------------]  loss 2.3141  lr 1.00e-04  512 samples/s  ETA 3m12s
//
// When stderr is no terminal (a job runner, nohup, a notebook) it prints instead one plain
// line every 10 seconds, so a long run is never silent and a short one adds nothing:
//
//   progress: step 120/1000  loss 2.3141  lr 1.00e-04  512 samples/s  elapsed 41s  ETA 3m12s
//
// A run of several phases names the phase first, and says what follows it, so its ETA is
// not read as the whole run's; where the phases after it are known, the line adds the whole
// run's, estimated at this phase's rate (an estimate, so marked "~"):
//
//   progress: pretraining (training follows): step 120/726  loss 2.3141  ...  ETA 3m12s  run ETA ~7m40s
//
// (the JSON-lines metrics log is the record of a run; these lines are for watching it).
#pragma once
#include <chrono>
#include <cstdint>
#include <string>

namespace nce::nn {

// What the bar shows after a step.
struct ProgressState {
    int64_t step = 0;                 // steps done, counted from the start of training
    int64_t total_steps = 0;          // steps the run will take when it is not stopped early
    double loss = 0;
    double learning_rate = 0;
    double samples_per_second = 0;
    double seconds_remaining = -1;    // negative: not known yet
    std::string phase;                // "" for a run of one phase
    double seconds_after = -1;        // the phases after this one, estimated; negative: none
};

// The bar's text, without the carriage return; `width` is the number of bar cells.
std::string format_progress(const ProgressState& state, int width = 20);
// The plain line printed without a terminal, `elapsed_seconds` since the bar was made.
std::string format_progress_line(const ProgressState& state, double elapsed_seconds);
// 42 -> "42s", 192 -> "3m12s", 3720 -> "1h02m".
std::string format_duration(double seconds);

class ProgressBar {
public:
    // Nothing unless `enabled`; the bar on a terminal, else a plain line every `plain_every`.
    explicit ProgressBar(bool enabled = true, std::chrono::milliseconds plain_every = std::chrono::seconds(10));
    ~ProgressBar();
    ProgressBar(const ProgressBar&) = delete;
    ProgressBar& operator=(const ProgressBar&) = delete;

    bool active() const { return active_; }
    // Redraws the bar, at most ten times a second (the last step always draws).
    void update(const ProgressState& state);
    // Prints a line of its own (an evaluation's result) above the bar.
    void message(const std::string& line);
    // Ends the bar's line, so whatever is printed next starts on a fresh one.
    void finish();

private:
    void clear_line();

    bool active_ = false;  // drawing the bar on a terminal
    bool plain_ = false;   // printing plain lines instead
    std::chrono::milliseconds plain_every_;
    std::chrono::steady_clock::time_point start_, last_plain_;
    bool drawn_ = false;
    std::string last_line_;
    std::chrono::steady_clock::time_point last_draw_{};
};

}  // namespace nce::nn
