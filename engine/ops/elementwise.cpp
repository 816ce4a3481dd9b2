// Broadcasting arithmetic on Vars: add, sub, mul, div, neg, the scalar forms and the
// operators that spell them.
//
// Broadcasting (NumPy rules) copies an input along the axes where it has size 1 (or is
// missing). Each copy feeds the output, so the input's gradient is the SUM of the output
// gradient over those copies: sum_to(gradient, input shape) undoes the broadcast.
#include "engine/ops.h"

namespace nce {
namespace {

// The checks every binary op makes, in the op's own name: float operands of one dtype
// whose shapes broadcast.
void check_binary_operands(const Var& a, const Var& b, const char* op) {
    check_floating(a.value(), op, "left operand");
    check_floating(b.value(), op, "right operand");
    check_same_dtype(a.value(), b.value(), op);
    broadcast_shapes(a.shape(), b.shape(), op);
}

}  // namespace

// y = a + b                          a: [..a]   b: [..b]   y: broadcast shape
//
// dy/da = 1 and dy/db = 1 elementwise, so
//   dL/da = sum_to(dL/dy, shape of a)
//   dL/db = sum_to(dL/dy, shape of b)
// The backward keeps the two input shapes only.
Var add(const Var& a, const Var& b) {
    check_binary_operands(a, b, "add");
    return Var::from_op("add", add(a.value(), b.value()), {a, b},
        [a_shape = a.shape(), b_shape = b.shape()](const Tensor& dy) -> Grads {
            return {sum_to(dy, a_shape), sum_to(dy, b_shape)};
        });
}

// y = a - b
//
// dy/da = 1 and dy/db = -1, so
//   dL/da = sum_to(dL/dy, shape of a)
//   dL/db = sum_to(-dL/dy, shape of b)
Var sub(const Var& a, const Var& b) {
    check_binary_operands(a, b, "sub");
    return Var::from_op("sub", sub(a.value(), b.value()), {a, b},
        [a_shape = a.shape(), b_shape = b.shape()](const Tensor& dy) -> Grads {
            return {sum_to(dy, a_shape), sum_to(neg(dy), b_shape)};
        });
}

// y = a ⊙ b   (elementwise product)
//
// dy/da = b and dy/db = a, so
//   dL/da = sum_to(dL/dy ⊙ b, shape of a)
//   dL/db = sum_to(dL/dy ⊙ a, shape of b)
// dL/da needs only b and dL/db only a: the backward keeps b only when a needs a gradient,
// and a only when b does (a constant factor's partner is not kept).
Var mul(const Var& a, const Var& b) {
    check_binary_operands(a, b, "mul");
    return Var::from_op("mul", mul(a.value(), b.value()), {a, b},
        [av = b.requires_grad() ? a.value() : Tensor(), bv = a.requires_grad() ? b.value() : Tensor(),
         a_shape = a.shape(), b_shape = b.shape()](const Tensor& dy) -> Grads {
            Tensor da = bv.defined() ? sum_to(dy * bv, a_shape) : Tensor();
            Tensor db = av.defined() ? sum_to(dy * av, b_shape) : Tensor();
            return {da, db};
        });
}

// y = a / b   (elementwise)
//
// dy/da = 1/b and dy/db = -a/b^2, so
//   dL/da = sum_to(dL/dy / b, shape of a)
//   dL/db = sum_to(-dL/dy ⊙ a / b^2, shape of b)
// In the backward, da = dL/dy / b (before summing) gives dL/db's term as -da ⊙ a / b.
// Both gradients need b; only dL/db needs a, so a is kept only when b needs a gradient.
// b = 0 gives inf or nan, as IEEE division does.
Var div(const Var& a, const Var& b) {
    check_binary_operands(a, b, "div");
    return Var::from_op("div", div(a.value(), b.value()), {a, b},
        [av = b.requires_grad() ? a.value() : Tensor(), bv = b.value(), a_shape = a.shape(),
         a_needs_grad = a.requires_grad()](const Tensor& dy) -> Grads {
            Tensor da = dy / bv;  // broadcast shape
            Tensor db = av.defined() ? sum_to(neg(da * av / bv), bv.shape()) : Tensor();
            return {a_needs_grad ? sum_to(da, a_shape) : Tensor(), db};
        });
}

// y = -x:   dy/dx = -1, so dL/dx = -dL/dy. The backward keeps nothing.
Var neg(const Var& x) {
    check_floating(x.value(), "neg", "input");
    return Var::from_op("neg", neg(x.value()), {x}, [](const Tensor& dy) -> Grads { return {neg(dy)}; });
}

// y = x + s for a constant s:   dy/dx = 1, so dL/dx = dL/dy. The backward keeps nothing.
Var add_scalar(const Var& x, double s) {
    check_floating(x.value(), "add_scalar", "input");
    return Var::from_op("add_scalar", add(x.value(), s), {x}, [](const Tensor& dy) -> Grads { return {dy}; });
}

// y = s · x for a constant s:   dy/dx = s, so dL/dx = s · dL/dy. The backward keeps s.
Var mul_scalar(const Var& x, double s) {
    check_floating(x.value(), "mul_scalar", "input");
    return Var::from_op("mul_scalar", mul(x.value(), s), {x}, [s](const Tensor& dy) -> Grads { return {dy * s}; });
}

// The operators are spellings of the ops above; their gradients are those ops' gradients.
Var operator+(const Var& a, const Var& b) { return add(a, b); }
Var operator-(const Var& a, const Var& b) { return sub(a, b); }
Var operator*(const Var& a, const Var& b) { return mul(a, b); }
Var operator/(const Var& a, const Var& b) { return div(a, b); }
Var operator-(const Var& x) { return neg(x); }
Var operator+(const Var& x, double s) { return add_scalar(x, s); }
Var operator-(const Var& x, double s) { return add_scalar(x, -s); }
Var operator*(const Var& x, double s) { return mul_scalar(x, s); }
Var operator/(const Var& x, double s) {
    NCE_CHECK(s != 0.0, "operator/: Var of shape {} divided by the scalar 0", shape_string(x.shape()));
    return mul_scalar(x, 1.0 / s);
}
Var operator+(double s, const Var& x) { return add_scalar(x, s); }
Var operator-(double s, const Var& x) { return add_scalar(neg(x), s); }
Var operator*(double s, const Var& x) { return mul_scalar(x, s); }

}  // namespace nce
