#pragma once
#include "losses/loss.h"

namespace nce::losses {

LossDefinition triplet_definition();

}  // namespace nce::losses
