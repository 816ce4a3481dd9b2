#include "engine/checks/checks.h"

namespace nce::checks {

void add_l2_normalize_checks(CheckRegistry&) {}

}  // namespace nce::checks
