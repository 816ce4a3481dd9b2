// Placeholder: replaced by the loss's implementation.
#include "losses/contrastive.h"

namespace nce::losses {

LossDefinition contrastive_definition() {
    LossDefinition loss;
    loss.name = "contrastive";
    loss.compute = [](const LossArguments&) -> Var { fail("contrastive: not implemented yet"); };
    return loss;
}

}  // namespace nce::losses
