// Helpers the loss tests share: how far a value is from its reference, and random unit rows.
// Three measures, because a reference's size decides which error is meaningful:
//
//   relative_error(actual, expected)      |actual - expected| / |expected|: for references
//                                         well away from 0 (a loss, a gradient of fixed scale)
//   scaled_error(actual, expected)        the same, absolute where |expected| < 1: for
//                                         references that may be 0 or tiny (a vanishing
//                                         gradient must not divide by its own smallness)
//   relative_to_larger(a, b)              max |a - b| over the larger of max |a|, max |b|:
//                                         two computations of one quantity, neither the reference
//
// For tensors each is over the largest entry difference, compared in float64.
#pragma once
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "engine/nce.h"

namespace nce::testing {

inline double relative_error(double actual, long double expected) {
    const long double scale = std::max<long double>(std::fabs(expected), 1e-300L);
    return static_cast<double>(std::fabs(static_cast<long double>(actual) - expected) / scale);
}

inline double relative_error(const Tensor& actual, const Tensor& expected) {
    REQUIRE_MESSAGE(actual.shape() == expected.shape(),
                    shape_string(actual.shape()) << " vs " << shape_string(expected.shape()));
    const Tensor a = actual.to(Dtype::Float64), e = expected.to(Dtype::Float64);
    return max_abs_difference(a, e) / std::max(max_abs(e), 1e-300);
}

inline double scaled_error(double actual, long double expected) {
    const long double scale = std::max<long double>(std::fabs(expected), 1.0L);
    return static_cast<double>(std::fabs(static_cast<long double>(actual) - expected) / scale);
}

inline double scaled_error(const Tensor& actual, const Tensor& expected) {
    REQUIRE_MESSAGE(actual.shape() == expected.shape(),
                    shape_string(actual.shape()) << " vs " << shape_string(expected.shape()));
    const Tensor a = actual.to(Dtype::Float64), e = expected.to(Dtype::Float64);
    return max_abs_difference(a, e) / std::max(max_abs(e), 1.0);
}

inline double relative_to_larger(const Tensor& a, const Tensor& b) {
    REQUIRE(a.shape() == b.shape());
    const Tensor x = a.to(Dtype::Float64), y = b.to(Dtype::Float64);
    const double scale = std::max(max_abs(x), max_abs(y));
    return scale == 0 ? 0 : max_abs_difference(x, y) / scale;
}

// Rows drawn from N(0, I) in float64 and scaled to unit length: embeddings as a model gives them.
inline Tensor unit_rows(Generator& generator, int64_t rows, int64_t dim) {
    Tensor x = generator.normal({rows, dim}, Dtype::Float64);
    return x / sqrt(sum(x * x, 1, true));
}

}  // namespace nce::testing
