// Round axis ticks: a 1-2-2.5-5 step and whole multiples of it (axis_ticks.h).
#include "retrieval/report/axis_ticks.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace nce::retrieval {
namespace {

// The mantissas a round step may have; 10 closes the decade.
constexpr double kRoundMantissas[] = {1.0, 2.0, 2.5, 5.0, 10.0};

}  // namespace

std::string AxisTicks::label(double value) const {
    std::string text = fmt::format("{:.{}f}", value, decimals);
    return text == fmt::format("-{:.{}f}", 0.0, decimals) ? text.substr(1) : text;  // no "-0.0"
}

AxisTicks round_ticks(double low, double high, int target) {
    if (!std::isfinite(low) || !std::isfinite(high)) low = 0, high = 1;
    if (high <= low) {
        double middle = low;
        low = middle - 0.5;
        high = middle + 0.5;
    }
    target = std::max(target, 1);
    double raw = (high - low) / target;
    double exponent = std::floor(std::log10(raw));
    double power = std::pow(10.0, exponent);
    double mantissa = raw / power;
    double chosen = 10.0;
    for (double candidate : kRoundMantissas)
        if (candidate >= mantissa * (1 - 1e-12)) {
            chosen = candidate;
            break;
        }
    AxisTicks ticks;
    ticks.step = chosen * power;
    // Whole multiples of the step, computed as k · step so the error does not accumulate; the
    // small slack keeps a bound that is already a multiple (1.0 / 0.2) from gaining a tick.
    double first = std::floor(low / ticks.step + 1e-9), last = std::ceil(high / ticks.step - 1e-9);
    for (double k = first; k <= last; k += 1) ticks.values.push_back(k * ticks.step);
    // Decimals: those of 10^exponent, one more for a 2.5 step (0.25, 2.5), none for a step of 10^e.
    double step_exponent = chosen == 10.0 ? exponent + 1 : exponent;
    ticks.decimals = std::max(0, static_cast<int>(-step_exponent) + (chosen == 2.5 ? 1 : 0));
    return ticks;
}

bool is_round_step(double step) {
    if (!(step > 0) || !std::isfinite(step)) return false;
    double power = std::pow(10.0, std::floor(std::log10(step)));
    double mantissa = step / power;
    return std::any_of(std::begin(kRoundMantissas), std::end(kRoundMantissas),
                       [mantissa](double round) { return std::abs(mantissa - round) <= 1e-9 * round; });
}

}  // namespace nce::retrieval
