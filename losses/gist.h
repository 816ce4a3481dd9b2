// gist: InfoNCE over a-p, a-a and p-p logits with false negatives masked by a guide model.
// PLACEHOLDER: being written (issue 4). Spec: ../shared/spec/losses.md, second table.
#pragma once
#include "losses/loss.h"

namespace nce::losses {

LossDefinition gist_definition();

}  // namespace nce::losses
