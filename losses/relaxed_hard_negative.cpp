// PLACEHOLDER: being written (issue 4).
#include "losses/relaxed_hard_negative.h"

namespace nce::losses {

LossDefinition relaxed_hard_negative_definition() {
    LossDefinition loss;
    loss.name = "relaxed_hard_negative";
    loss.compute = [](const LossArguments&) -> Var { fail("relaxed_hard_negative: not written yet"); };
    return loss;
}

}  // namespace nce::losses
