// Placeholder: replaced by the loss's implementation.
#include "losses/infonce.h"

namespace nce::losses {

LossDefinition infonce_definition() {
    LossDefinition loss;
    loss.name = "infonce";
    loss.compute = [](const LossArguments&) -> Var { fail("infonce: not implemented yet"); };
    return loss;
}

}  // namespace nce::losses
