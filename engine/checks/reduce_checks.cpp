#include "engine/checks/checks.h"

namespace nce::checks {

void add_reduce_checks(CheckRegistry&) {}

}  // namespace nce::checks
