#pragma once
#include "losses/loss.h"

namespace nce::losses {

LossDefinition hard_negative_infonce_definition();

}  // namespace nce::losses
