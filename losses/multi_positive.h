#pragma once
#include "losses/loss.h"

namespace nce::losses {

LossDefinition multi_positive_definition();

}  // namespace nce::losses
