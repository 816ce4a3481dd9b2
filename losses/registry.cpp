// Placeholder: replaced by the registry's implementation.
#include "losses/losses.h"

namespace nce::losses {}  // namespace nce::losses
