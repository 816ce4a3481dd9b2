// dcl: decoupled contrastive loss, both directions, the positive left out of the denominator.
// PLACEHOLDER: being written (issue 4). Spec: ../shared/spec/losses.md, second table.
#pragma once
#include "losses/loss.h"

namespace nce::losses {

LossDefinition dcl_definition();

}  // namespace nce::losses
