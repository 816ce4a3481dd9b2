#pragma once
#include "losses/loss.h"

namespace nce::losses {

LossDefinition contrastive_definition();

}  // namespace nce::losses
