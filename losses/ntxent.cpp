// Placeholder: replaced by the loss's implementation.
#include "losses/ntxent.h"

namespace nce::losses {

LossDefinition ntxent_definition() {
    LossDefinition loss;
    loss.name = "ntxent";
    loss.compute = [](const LossArguments&) -> Var { fail("ntxent: not implemented yet"); };
    return loss;
}

}  // namespace nce::losses
