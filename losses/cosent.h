// cosent: ranks the pairs' scaled similarities by their labels.
// PLACEHOLDER: being written (issue 4). Spec: ../shared/spec/losses.md, second table.
#pragma once
#include "losses/loss.h"

namespace nce::losses {

LossDefinition cosent_definition();

}  // namespace nce::losses
