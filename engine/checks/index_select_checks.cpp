#include "engine/checks/checks.h"

namespace nce::checks {

void add_index_select_checks(CheckRegistry&) {}

}  // namespace nce::checks
