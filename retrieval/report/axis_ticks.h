// Axis ticks at round numbers for the SVG charts (retrieval/report/svg_charts.h).
//
// A reader compares bars and curves against the ticks, so the ticks sit where a person would
// put them: the step is 1, 2, 2.5 or 5 times a power of ten, and every tick is a whole
// multiple of the step. For a range [low, high] and a wish of about `target` intervals:
//
//   raw = (high - low) / target,  raw = m · 10^e with 1 <= m < 10
//   step = (the smallest of 1, 2, 2.5, 5, 10 that is >= m) · 10^e
//   ticks: floor(low / step) · step, ... , ceil(high / step) · step   (they cover the range)
//
//   [0, 0.93], 5  -> step 0.2:  0, 0.2, 0.4, 0.6, 0.8, 1
//   [1.2, 3.4], 5 -> step 0.5:  1, 1.5, 2, 2.5, 3, 3.5
//   [0, 250], 5   -> step 50:   0, 50, 100, 150, 200, 250
//
// The labels have as many decimals as the step needs (0.25 -> 2, 0.2 -> 1, 50 -> 0), so no
// label reads 0.30000000000000004.
#pragma once
#include <string>
#include <vector>

namespace nce::retrieval {

struct AxisTicks {
    double step = 1;
    std::vector<double> values;  // ascending; the first <= low, the last >= high
    int decimals = 0;            // for the labels

    double first() const { return values.front(); }
    double last() const { return values.back(); }
    // The tick's label: "0.25", "1.5", "100".
    std::string label(double value) const;
};

// The ticks above. A range that is empty (high <= low) or not finite is widened to one that
// is ([low - 0.5, low + 0.5], or [0, 1]); target below 1 counts as 1.
AxisTicks round_ticks(double low, double high, int target = 5);

// Whether `step` is 1, 2, 2.5 or 5 times a power of ten (to a relative 1e-9).
bool is_round_step(double step);

}  // namespace nce::retrieval
