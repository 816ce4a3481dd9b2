// PLACEHOLDER: being written (issue 4).
#include "losses/multi_positive_in.h"

namespace nce::losses {

LossDefinition multi_positive_in_definition() {
    LossDefinition loss;
    loss.name = "multi_positive_in";
    loss.compute = [](const LossArguments&) -> Var { fail("multi_positive_in: not written yet"); };
    return loss;
}

}  // namespace nce::losses
