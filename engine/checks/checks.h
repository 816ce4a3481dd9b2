// The gradient checks of every engine op, one file per op file of engine/ops/. Each op
// registers cases at two or more shapes (broadcasting and masks included) that
// `nce gradcheck` and tests/test_gradcheck_ops.cpp run in both dtypes.
#pragma once
#include "engine/gradcheck.h"
#include "engine/ops.h"

namespace nce::checks {

void add_matmul_checks(CheckRegistry& registry);
void add_elementwise_checks(CheckRegistry& registry);
void add_unary_checks(CheckRegistry& registry);
void add_reduce_checks(CheckRegistry& registry);
void add_shape_checks(CheckRegistry& registry);
void add_index_select_checks(CheckRegistry& registry);
void add_softmax_checks(CheckRegistry& registry);
void add_cross_entropy_checks(CheckRegistry& registry);
void add_layer_norm_checks(CheckRegistry& registry);
void add_dropout_checks(CheckRegistry& registry);
void add_masked_mean_pool_checks(CheckRegistry& registry);
void add_l2_normalize_checks(CheckRegistry& registry);
void add_attention_checks(CheckRegistry& registry);

// Standard normal entries of the given shape, drawn in float64.
inline Tensor normal(Generator& generator, const Shape& shape) { return generator.normal(shape, Dtype::Float64); }

// Uniform in [low, high): for inputs that must stay in a domain (log, sqrt, pow).
inline Tensor uniform(Generator& generator, const Shape& shape, double low, double high) {
    return generator.uniform(shape, Dtype::Float64, low, high);
}

// Normal entries pushed at least `margin` away from 0, for ops with a kink there (relu).
Tensor away_from_zero(Generator& generator, const Shape& shape, double margin = 0.1);

}  // namespace nce::checks
