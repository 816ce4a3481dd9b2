// Gradient clipping by the global L2 norm, as PyTorch's torch.nn.utils.clip_grad_norm_.
#pragma once
#include <vector>

#include "engine/nce.h"

namespace nce::nn {

// Rescales the gradients of `parameters` so that, seen as one long vector, their L2 norm is
// at most max_norm (which must be finite and > 0):
//   total_norm = sqrt(sum over parameters of ||grad||²)
//   clip_coef  = max_norm / (total_norm + 1e-6)
//   every grad = grad · min(clip_coef, 1)       (unchanged when total_norm <= max_norm)
// Returns total_norm, measured before clipping. Parameters with no gradient are skipped; with
// none at all the norm is 0. A NaN or infinite gradient makes total_norm non-finite: then the
// gradients are left exactly as they are and that norm is returned for the caller to act on
// (typically by skipping the step). PyTorch would scale them by NaN instead.
double clip_grad_norm(const std::vector<Var*>& parameters, double max_norm);

}  // namespace nce::nn
