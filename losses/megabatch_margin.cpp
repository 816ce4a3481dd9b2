// PLACEHOLDER: being written (issue 4).
#include "losses/megabatch_margin.h"

namespace nce::losses {

LossDefinition megabatch_margin_definition() {
    LossDefinition loss;
    loss.name = "megabatch_margin";
    loss.compute = [](const LossArguments&) -> Var { fail("megabatch_margin: not written yet"); };
    return loss;
}

}  // namespace nce::losses
