#pragma once
#include "losses/loss.h"

namespace nce::losses {

LossDefinition ntxent_definition();

}  // namespace nce::losses
