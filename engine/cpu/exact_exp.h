// exp for the engine's vectorised loops, with exp(-inf) = 0 exactly.
//
// Eigen's vectorised exp clamps its argument from below (at about -88.4 for float32 and
// -709.4 for float64), so exp(-inf), and exp of anything below that, comes out as a tiny
// denormal (about 4e-39 in float32, 5e-309 in float64), not 0. A masked logit is -inf and
// must get probability exactly 0. So every result below the smallest normal number is
// flushed to 0: x < log(smallest normal) gives 0, -inf included. The absolute error is
// below that smallest normal (1.2e-38 in float32, 2.2e-308 in float64), and no denormal
// ever reaches the next loop.
#pragma once
#include <Eigen/Core>
#include <cmath>
#include <limits>

namespace nce::cpu {

// Written with Eigen's vectorised exp and no select (Eigen 3.4 evaluates a select one
// coefficient at a time, which took every exp with it to the scalar libm call): the flush is
// a multiplication by a step that is 1 for x >= log(smallest normal), 0 below it (-inf
// included) and NaN for NaN,
//   step = clamp((x - L) · 2^k + 1, 0, 1),   L = log(smallest normal)
// Exact: any x below L lies at least one ulp of L below it (2^-17 in float32, 2^-43 in
// float64), and 2^k times that ulp is above 1 (k = 24, 48), so the step is exactly 0 there;
// at and above L it is exactly 1, and exp(x) · 1 is exp(x).
template <typename Derived>
auto exact_exp(const Eigen::ArrayBase<Derived>& x) {
    using T = typename Derived::Scalar;
    static const T lowest_normal_log = std::log(std::numeric_limits<T>::min());
    constexpr T steepness = sizeof(T) == 4 ? T(16777216.0) : T(281474976710656.0);  // 2^24, 2^48
    return x.derived().exp() * ((x.derived() - lowest_normal_log) * steepness + T(1)).max(T(0)).min(T(1));
}

}  // namespace nce::cpu
