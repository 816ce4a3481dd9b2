// PLACEHOLDER: being written (issue 4).
#include "losses/siglip.h"

namespace nce::losses {

LossDefinition siglip_definition() {
    LossDefinition loss;
    loss.name = "siglip";
    loss.compute = [](const LossArguments&) -> Var { fail("siglip: not written yet"); };
    return loss;
}

}  // namespace nce::losses
