#pragma once
#include "losses/loss.h"

namespace nce::losses {

LossDefinition rank_infonce_definition();

}  // namespace nce::losses
