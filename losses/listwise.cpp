// Placeholder: replaced by the loss's implementation.
#include "losses/listwise.h"

namespace nce::losses {

LossDefinition listwise_definition() {
    LossDefinition loss;
    loss.name = "listwise";
    loss.compute = [](const LossArguments&) -> Var { fail("listwise: not implemented yet"); };
    return loss;
}

}  // namespace nce::losses
