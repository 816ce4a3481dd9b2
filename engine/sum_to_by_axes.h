// sum_to for any backend, from its own reduce and copy: the reverse of broadcasting.
#pragma once
#include "engine/backend.h"

namespace nce {

// Sums x down to out's shape: out's shape is padded with leading 1s to x's rank, and each
// axis where the two differ (out has 1 there) is summed away with backend.reduce, one axis
// at a time in order, on the backend's device; the result is copied into out.
void sum_to_by_axes(Backend& backend, const Tensor& x, Tensor& out);

}  // namespace nce
