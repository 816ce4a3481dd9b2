#include "engine/checks/checks.h"

namespace nce::checks {

void add_masked_mean_pool_checks(CheckRegistry&) {}

}  // namespace nce::checks
