#include "engine/checks/checks.h"

namespace nce::checks {

void add_dropout_checks(CheckRegistry&) {}

}  // namespace nce::checks
