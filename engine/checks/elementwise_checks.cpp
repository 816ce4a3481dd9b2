#include "engine/checks/checks.h"

namespace nce::checks {

void add_elementwise_checks(CheckRegistry&) {}

}  // namespace nce::checks
