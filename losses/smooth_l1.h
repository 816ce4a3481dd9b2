#pragma once
#include "losses/loss.h"

namespace nce::losses {

LossDefinition smooth_l1_definition();

}  // namespace nce::losses
