// Reductions of a Var: sum, mean and max, along one axis or over all elements.
//
// A reduction along `axis` turns x [.., n, ..] into y [.., ..] (or [.., 1, ..] with
// keepdim). Each output element collects the n inputs of one slice along the axis, so the
// backward sends each output's gradient back to the elements of its own slice.
#include "engine/ops.h"

namespace nce {
namespace {

// x's shape with `axis` kept as size 1: the shape y has with keepdim. The gradient of a
// reduction is reshaped to it (no copy) so that it broadcasts against x.
Shape keepdim_shape(const Shape& shape, int64_t axis) {
    Shape out = shape;
    out[axis] = 1;
    return out;
}

// g copied along its size-1 (or missing) axes up to `shape`: the broadcast that add does.
Tensor broadcast_to(const Tensor& g, const Shape& shape) {
    return add(Tensor::zeros(shape, g.dtype(), g.device()), g);
}

// A tensor of shape x_shape, zero everywhere except at the argmax of each slice along
// `axis`, where it holds that slice's gradient:
//   dx[.., argmax[.., ..], ..] = dy[.., ..]                 dy, argmax: [.., 1, ..]
// The backend scatters along the last axis, so `axis` is moved last first: x_shape
// becomes [rows, n], each row one slice. Moving a size-1 axis does not reorder elements,
// so dy and argmax already list the rows in that order.
Tensor scatter_to_argmax(const Tensor& dy, const Tensor& argmax, const Shape& x_shape, int64_t axis) {
    int64_t rank = static_cast<int64_t>(x_shape.size());
    int64_t n = x_shape[axis];
    int64_t rows = shape_numel(x_shape) / n;
    Tensor dx_rows = Tensor::zeros({rows, n}, dy.dtype(), dy.device());  // [rows, n]
    backend_for(dy.device()).scatter_add_last_axis(dy.reshape({rows}), argmax.reshape({rows}), dx_rows);
    if (axis == rank - 1) return dx_rows.reshape(x_shape);
    // dx_rows as [.., .., n] (x's other axes in order, then `axis`), permuted back.
    Shape moved_shape;
    for (int64_t i = 0; i < rank; ++i)
        if (i != axis) moved_shape.push_back(x_shape[i]);
    moved_shape.push_back(n);
    std::vector<int64_t> back(static_cast<size_t>(rank));  // output axis i reads moved axis back[i]
    for (int64_t i = 0; i < rank; ++i) back[i] = i < axis ? i : (i == axis ? rank - 1 : i - 1);
    return permute(dx_rows.reshape(moved_shape), back);
}

}  // namespace

// y = sum_k x[.., k, ..] along `axis`        x: [.., n, ..]   y: [.., ..] (keepdim: [.., 1, ..])
//
// dy/dx[.., k, ..] = 1 for every k, so dL/dx[.., k, ..] = dL/dy[.., ..]: the output
// gradient copied n times along the axis. The backward keeps x's shape only.
Var sum(const Var& x, int64_t axis, bool keepdim) {
    check_floating(x.value(), "sum", "input");
    axis = normalize_axis(axis, x.value().rank(), "sum");
    return Var::from_op("sum", sum(x.value(), axis, keepdim), {x},
        [x_shape = x.shape(), axis](const Tensor& dy) -> Grads {
            return {broadcast_to(dy.reshape(keepdim_shape(x_shape, axis)), x_shape)};
        });
}

// y = sum of all x_i  (shape []):   dy/dx_i = 1, so dL/dx = dL/dy in every element.
Var sum(const Var& x) {
    check_floating(x.value(), "sum", "input");
    return Var::from_op("sum", sum(x.value()), {x},
        [x_shape = x.shape()](const Tensor& dy) -> Grads { return {broadcast_to(dy, x_shape)}; });
}

// y = (1/n) sum_k x[.., k, ..] along `axis`, n = x's size along it.
//
// dy/dx[.., k, ..] = 1/n, so dL/dx[.., k, ..] = dL/dy[.., ..] / n.
Var mean(const Var& x, int64_t axis, bool keepdim) {
    check_floating(x.value(), "mean", "input");
    axis = normalize_axis(axis, x.value().rank(), "mean");
    int64_t n = x.shape()[axis];
    NCE_CHECK(n > 0, "mean: axis {} of the input {} is empty; there is nothing to average", axis,
              shape_string(x.shape()));
    return Var::from_op("mean", mean(x.value(), axis, keepdim), {x},
        [x_shape = x.shape(), axis, n](const Tensor& dy) -> Grads {
            return {broadcast_to(dy.reshape(keepdim_shape(x_shape, axis)), x_shape) * (1.0 / static_cast<double>(n))};
        });
}

// y = (1/N) sum of all x_i, N = x's element count:   dL/dx = dL/dy / N in every element.
Var mean(const Var& x) {
    check_floating(x.value(), "mean", "input");
    int64_t count = x.value().numel();
    NCE_CHECK(count > 0, "mean: the input {} is empty; there is nothing to average", shape_string(x.shape()));
    return Var::from_op("mean", mean(x.value()), {x},
        [x_shape = x.shape(), count](const Tensor& dy) -> Grads {
            return {broadcast_to(dy, x_shape) * (1.0 / static_cast<double>(count))};
        });
}

// y = max_k x[.., k, ..] along `axis` = x[.., a, ..], a = argmax (the first one on ties).
//
// Near x, y moves with x[.., a, ..] alone: dy/dx[.., k, ..] = 1 if k = a, else 0. So
// dL/dx is zero except dL/dx[.., a, ..] = dL/dy[.., ..]. (At a tie the max has no
// derivative; the first maximum takes the whole gradient.) The backward keeps the argmax
// indices and x's shape.
Var max(const Var& x, int64_t axis, bool keepdim) {
    check_floating(x.value(), "max", "input");
    axis = normalize_axis(axis, x.value().rank(), "max");
    NCE_CHECK(x.shape()[axis] > 0, "max: axis {} of the input {} is empty; a maximum needs at least one element", axis,
              shape_string(x.shape()));
    MaxResult result = max(x.value(), axis, keepdim);
    return Var::from_op("max", std::move(result.values), {x},
        [argmax = result.indices, x_shape = x.shape(), axis](const Tensor& dy) -> Grads {
            return {scatter_to_argmax(dy, argmax, x_shape, axis)};
        });
}

// y = max of all x_i: the axis form on x flattened to [N]; the gradient goes to the first
// maximum and is reshaped back to x's shape.
Var max(const Var& x) {
    check_floating(x.value(), "max", "input");
    int64_t count = x.value().numel();
    NCE_CHECK(count > 0, "max: the input {} is empty; a maximum needs at least one element", shape_string(x.shape()));
    MaxResult result = max(x.value().reshape({count}), 0, false);
    return Var::from_op("max", std::move(result.values), {x},
        [argmax = result.indices, x_shape = x.shape(), count](const Tensor& dy) -> Grads {
            return {scatter_to_argmax(dy, argmax, {count}, 0).reshape(x_shape)};
        });
}

}  // namespace nce
