// PLACEHOLDER: being written (issue 4).
#include "losses/gist.h"

namespace nce::losses {

LossDefinition gist_definition() {
    LossDefinition loss;
    loss.name = "gist";
    loss.compute = [](const LossArguments&) -> Var { fail("gist: not written yet"); };
    return loss;
}

}  // namespace nce::losses
