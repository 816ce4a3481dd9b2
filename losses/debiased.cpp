// PLACEHOLDER: being written (issue 4).
#include "losses/debiased.h"

namespace nce::losses {

LossDefinition debiased_definition() {
    LossDefinition loss;
    loss.name = "debiased";
    loss.compute = [](const LossArguments&) -> Var { fail("debiased: not written yet"); };
    return loss;
}

}  // namespace nce::losses
