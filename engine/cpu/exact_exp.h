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

template <typename Derived>
auto exact_exp(const Eigen::ArrayBase<Derived>& x) {
    using T = typename Derived::Scalar;
    static const T lowest_normal_log = std::log(std::numeric_limits<T>::min());
    return (x.derived() < lowest_normal_log).select(T(0), x.derived().exp());
}

}  // namespace nce::cpu
