#include "engine/checks/checks.h"

namespace nce::checks {

void add_unary_checks(CheckRegistry&) {}

}  // namespace nce::checks
