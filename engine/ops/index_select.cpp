#include "engine/ops.h"

namespace nce {}  // namespace nce
