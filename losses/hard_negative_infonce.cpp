// Placeholder: replaced by the loss's implementation.
#include "losses/hard_negative_infonce.h"

namespace nce::losses {

LossDefinition hard_negative_infonce_definition() {
    LossDefinition loss;
    loss.name = "hard_negative_infonce";
    loss.compute = [](const LossArguments&) -> Var { fail("hard_negative_infonce: not implemented yet"); };
    return loss;
}

}  // namespace nce::losses
