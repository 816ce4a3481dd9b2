// Placeholder: replaced by the loss's implementation.
#include "losses/infonce_symmetric.h"

namespace nce::losses {

LossDefinition infonce_symmetric_definition() {
    LossDefinition loss;
    loss.name = "infonce_symmetric";
    loss.compute = [](const LossArguments&) -> Var { fail("infonce_symmetric: not implemented yet"); };
    return loss;
}

}  // namespace nce::losses
