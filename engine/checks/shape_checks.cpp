#include "engine/checks/checks.h"

namespace nce::checks {

void add_shape_checks(CheckRegistry&) {}

}  // namespace nce::checks
