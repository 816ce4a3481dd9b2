#include "engine/npy.h"

namespace nce {}  // namespace nce
