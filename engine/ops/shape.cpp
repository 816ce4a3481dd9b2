// Ops that move values without changing them: reshape, permute, transpose, slice, concat,
// stack. Every output element is exactly one input element, so every backward sends each
// gradient element back to the one place its value came from.
#include "engine/ops.h"

namespace nce {

// y = x viewed with a new shape          x: [any]   y: [shape], same element count
//
// Reshaping keeps the elements in the same (row-major) order: y_k = x_k for every flat k.
// So dL/dx_k = dL/dy_k, and dL/dx is dL/dy viewed with x's shape again.
Var reshape(const Var& x, const Shape& shape) {
    NCE_CHECK(x.defined(), "reshape: the input is undefined");
    for (int64_t size : shape)
        NCE_CHECK(size >= -1, "reshape: size {} in target shape {} is negative (only -1, meaning 'infer', is allowed)",
                  size, shape_string(shape));
    Tensor y = x.value().reshape(shape);
    return Var::from_op("reshape", std::move(y), {x},
        [x_shape = x.shape()](const Tensor& dy) -> Grads {
            return {dy.reshape(x_shape)};  // [x_shape]
        });
}

// y = x with its axes reordered          y axis i is x axis axes[i]
//
// y[j_0, .., j_r] = x[i] where i_{axes[k]} = j_k: one value moves, none change. Walking the
// same move backwards, dL/dx is dL/dy with the inverse reordering, the permutation
// `inverse` with inverse[axes[k]] = k (x axis a comes from y axis inverse[a]).
Var permute(const Var& x, const std::vector<int64_t>& axes) {
    Tensor y = permute(x.value(), axes);  // checks that `axes` is a permutation of x's axes
    std::vector<int64_t> inverse(axes.size());
    for (size_t k = 0; k < axes.size(); ++k)
        inverse[static_cast<size_t>(normalize_axis(axes[k], x.value().rank(), "permute"))] = static_cast<int64_t>(k);
    return Var::from_op("permute", std::move(y), {x},
        [inverse](const Tensor& dy) -> Grads {
            return {permute(dy, inverse)};  // [x.shape]
        });
}

// y = x with axes a and b swapped
//
// A swap is its own inverse: swapping the same two axes of dL/dy gives dL/dx.
Var transpose(const Var& x, int64_t axis_a, int64_t axis_b) {
    Tensor y = transpose(x.value(), axis_a, axis_b);
    return Var::from_op("transpose", std::move(y), {x},
        [axis_a, axis_b](const Tensor& dy) -> Grads {
            return {transpose(dy, axis_a, axis_b)};  // [x.shape]
        });
}

// y = x[.., start:end, ..] along `axis`  x: [.., n, ..]   y: [.., end - start, ..]
//
// y[.., k, ..] = x[.., start + k, ..], so dL/dx[.., start + k, ..] = dL/dy[.., k, ..] and
// the elements of x outside [start, end) did not reach y: their gradient is 0. So dL/dx is
// a zero tensor of x's shape with dL/dy written in at positions start..end-1.
Var slice(const Var& x, int64_t axis, int64_t start, int64_t end) {
    Tensor y = slice(x.value(), axis, start, end);  // checks the axis and the range
    int64_t slice_axis = normalize_axis(axis, x.value().rank(), "slice");
    return Var::from_op("slice", std::move(y), {x},
        [x_shape = x.shape(), slice_axis, start](const Tensor& dy) -> Grads {
            Tensor dx = Tensor::zeros(x_shape, dy.dtype(), dy.device());  // [x_shape]
            backend_for(dy.device())
                .copy_along_axis(dy, 0, dx, start, slice_axis, dy.shape()[slice_axis], /*accumulate=*/false);
            return {dx};
        });
}

// y = [x_0, x_1, ..] joined along `axis`  x_p: [.., n_p, ..]   y: [.., n_0 + n_1 + .., ..]
//
// Part p occupies positions offset_p .. offset_p + n_p - 1 of y along the axis, where
// offset_p = n_0 + .. + n_{p-1}. Each y element is one element of one part, so
// dL/dx_p = dL/dy[.., offset_p : offset_p + n_p, ..], a slice of the gradient.
Var concat(const std::vector<Var>& parts, int64_t axis) {
    std::vector<Tensor> values;
    for (const Var& part : parts) values.push_back(part.value());
    Tensor y = concat(values, axis);  // checks that the parts agree off the axis
    int64_t concat_axis = normalize_axis(axis, y.rank(), "concat");
    std::vector<int64_t> part_sizes;  // n_p
    for (const Tensor& value : values) part_sizes.push_back(value.shape()[concat_axis]);
    return Var::from_op("concat", std::move(y), parts,
        [concat_axis, part_sizes](const Tensor& dy) -> Grads {
            Grads dparts;
            int64_t offset = 0;
            for (int64_t size : part_sizes) {
                dparts.push_back(slice(dy, concat_axis, offset, offset + size));  // [.., n_p, ..]
                offset += size;
            }
            return dparts;
        });
}

// y = the parts stacked along a new axis   x_p: [s]   y: [.., P, ..] (P inserted at `axis`)
//
// y[.., p, ..] = x_p, so dL/dx_p = dL/dy[.., p, ..]: the slice p..p+1 of the gradient along
// the new axis, viewed with that axis dropped (back to shape s).
Var stack(const std::vector<Var>& parts, int64_t axis) {
    std::vector<Tensor> values;
    for (const Var& part : parts) values.push_back(part.value());
    Tensor y = stack(values, axis);  // checks that the parts have one shape
    int64_t stack_axis = normalize_axis(axis, y.rank(), "stack");
    return Var::from_op("stack", std::move(y), parts,
        [stack_axis, part_shape = values.front().shape(), count = static_cast<int64_t>(parts.size())](
            const Tensor& dy) -> Grads {
            Grads dparts;
            for (int64_t p = 0; p < count; ++p)
                dparts.push_back(slice(dy, stack_axis, p, p + 1).reshape(part_shape));  // [s]
            return dparts;
        });
}

}  // namespace nce
