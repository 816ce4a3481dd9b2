#pragma once
#include "losses/loss.h"

namespace nce::losses {

LossDefinition listwise_definition();

}  // namespace nce::losses
