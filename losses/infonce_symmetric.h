#pragma once
#include "losses/loss.h"

namespace nce::losses {

LossDefinition infonce_symmetric_definition();

}  // namespace nce::losses
