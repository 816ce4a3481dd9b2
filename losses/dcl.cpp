// PLACEHOLDER: being written (issue 4).
#include "losses/dcl.h"

namespace nce::losses {

LossDefinition dcl_definition() {
    LossDefinition loss;
    loss.name = "dcl";
    loss.compute = [](const LossArguments&) -> Var { fail("dcl: not written yet"); };
    return loss;
}

}  // namespace nce::losses
