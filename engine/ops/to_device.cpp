// A Var moved to another device: the same values there, and the gradient moved back.
//
// y = x, held on `device`          x: [...] on x's device      y: [...] on `device`
// dL/dx = dL/dy, copied back to x's device
#include "engine/ops.h"

namespace nce {

Var to(const Var& x, Device device) {
    const Device from = x.value().device();
    if (from == device) return x;
    return Var::from_op("to", x.value().to(device), {x},
                        [from](const Tensor& dy) -> Grads { return {dy.to(from)}; });
}

}  // namespace nce
