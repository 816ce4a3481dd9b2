#include "engine/sum_to_by_axes.h"

#include "engine/error.h"
#include "engine/shape.h"

namespace nce {

void sum_to_by_axes(Backend& backend, const Tensor& x, Tensor& out) {
    const Shape& from = x.shape();
    Shape target(from.size() - out.shape().size(), 1);
    target.insert(target.end(), out.shape().begin(), out.shape().end());
    size_t last_reduced = from.size();  // the last axis summed writes straight into out
    for (size_t axis = 0; axis < from.size(); ++axis)
        if (target[axis] != from[axis]) last_reduced = axis;
    if (last_reduced == from.size()) {  // nothing to sum
        backend.copy(x, out);
        return;
    }
    Tensor current = x;
    Shape current_shape = from;
    for (size_t axis = 0; axis <= last_reduced; ++axis) {
        if (target[axis] == current_shape[axis]) continue;
        NCE_CHECK(target[axis] == 1, "sum_to: cannot sum {} down to {}", shape_string(from), shape_string(out.shape()));
        current_shape[axis] = 1;
        Tensor reduced = axis == last_reduced ? out.reshape(current_shape)
                                              : Tensor::empty(current_shape, x.dtype(), backend.device());
        backend.reduce(ReduceOp::Sum, current, static_cast<int64_t>(axis), reduced, nullptr);
        current = reduced;
    }
}

}  // namespace nce
