// margin_mse: the student's positive-minus-negative margin regressed onto the teacher's.
// PLACEHOLDER: being written (issue 4). Spec: ../shared/spec/losses.md, second table.
#pragma once
#include "losses/loss.h"

namespace nce::losses {

LossDefinition margin_mse_definition();

}  // namespace nce::losses
