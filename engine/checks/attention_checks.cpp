#include "engine/checks/checks.h"

namespace nce::checks {

void add_attention_checks(CheckRegistry&) {}

}  // namespace nce::checks
