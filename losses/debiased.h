// debiased: debiased (and, with beta > 0, hard-negative-weighted) contrastive loss over two views.
// PLACEHOLDER: being written (issue 4). Spec: ../shared/spec/losses.md, second table.
#pragma once
#include "losses/loss.h"

namespace nce::losses {

LossDefinition debiased_definition();

}  // namespace nce::losses
