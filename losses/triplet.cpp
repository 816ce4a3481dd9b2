// Placeholder: replaced by the loss's implementation.
#include "losses/triplet.h"

namespace nce::losses {

LossDefinition triplet_definition() {
    LossDefinition loss;
    loss.name = "triplet";
    loss.compute = [](const LossArguments&) -> Var { fail("triplet: not implemented yet"); };
    return loss;
}

}  // namespace nce::losses
