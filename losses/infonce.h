#pragma once
#include "losses/loss.h"

namespace nce::losses {

LossDefinition infonce_definition();

}  // namespace nce::losses
