// PLACEHOLDER: being written (issue 4).
#include "losses/margin_mse.h"

namespace nce::losses {

LossDefinition margin_mse_definition() {
    LossDefinition loss;
    loss.name = "margin_mse";
    loss.compute = [](const LossArguments&) -> Var { fail("margin_mse: not written yet"); };
    return loss;
}

}  // namespace nce::losses
