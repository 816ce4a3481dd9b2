// Placeholder: replaced by the loss's implementation.
#include "losses/multi_positive.h"

namespace nce::losses {

LossDefinition multi_positive_definition() {
    LossDefinition loss;
    loss.name = "multi_positive";
    loss.compute = [](const LossArguments&) -> Var { fail("multi_positive: not implemented yet"); };
    return loss;
}

}  // namespace nce::losses
