// multi_positive_in: the positives of a group share one softmax mass (the log outside the mean).
// PLACEHOLDER: being written (issue 4). Spec: ../shared/spec/losses.md, second table.
#pragma once
#include "losses/loss.h"

namespace nce::losses {

LossDefinition multi_positive_in_definition();

}  // namespace nce::losses
