// contrastive: pull similar pairs together, push dissimilar pairs at least `margin` apart.
//   D_i = 1 - x_i·y_i (cosine) or |x_i - y_i| (euclidean)
//   L = (1/N) sum_i 1/2 [ label_i D_i^2 + (1 - label_i) relu(margin - D_i)^2 ]
// Derivation: docs/derivations/contrastive.md.
#pragma once
#include <string>

#include "losses/loss.h"

namespace nce::losses {

enum class ContrastiveMetric { Cosine, Euclidean };

// "cosine" or "euclidean"; anything else throws naming the parameter and the allowed values.
ContrastiveMetric parse_contrastive_metric(const std::string& text);

// x, y [N, d] (N >= 1, same shape and dtype); label [N] (data: 1 = similar, 0 = dissimilar;
// any finite value is used as the formula's weight); margin >= 0. x and y get a gradient.
// Returns L, shape []. With euclidean, D = 0 gets the subgradient 0 (no NaN).
Var contrastive(const Var& x, const Var& y, const Tensor& label, double margin = 0.5,
                ContrastiveMetric metric = ContrastiveMetric::Cosine);

LossDefinition contrastive_definition();

}  // namespace nce::losses
