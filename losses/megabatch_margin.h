// megabatch_margin: a margin on the positive and on the hardest in-batch negative.
// PLACEHOLDER: being written (issue 4). Spec: ../shared/spec/losses.md, second table.
#pragma once
#include "losses/loss.h"

namespace nce::losses {

LossDefinition megabatch_margin_definition();

}  // namespace nce::losses
