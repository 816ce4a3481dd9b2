// relaxed_hard_negative: InfoNCE whose target spreads p_relax over the other passages of the query's group.
// PLACEHOLDER: being written (issue 4). Spec: ../shared/spec/losses.md, second table.
#pragma once
#include "losses/loss.h"

namespace nce::losses {

LossDefinition relaxed_hard_negative_definition();

}  // namespace nce::losses
