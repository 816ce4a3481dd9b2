// siglip: pairwise sigmoid loss with a learnable scale and bias (no softmax over the batch).
// PLACEHOLDER: being written (issue 4). Spec: ../shared/spec/losses.md, second table.
#pragma once
#include "losses/loss.h"

namespace nce::losses {

LossDefinition siglip_definition();

}  // namespace nce::losses
