// Placeholder: replaced by the loss's implementation.
#include "losses/rank_infonce.h"

namespace nce::losses {

LossDefinition rank_infonce_definition() {
    LossDefinition loss;
    loss.name = "rank_infonce";
    loss.compute = [](const LossArguments&) -> Var { fail("rank_infonce: not implemented yet"); };
    return loss;
}

}  // namespace nce::losses
