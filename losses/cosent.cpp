// PLACEHOLDER: being written (issue 4).
#include "losses/cosent.h"

namespace nce::losses {

LossDefinition cosent_definition() {
    LossDefinition loss;
    loss.name = "cosent";
    loss.compute = [](const LossArguments&) -> Var { fail("cosent: not written yet"); };
    return loss;
}

}  // namespace nce::losses
