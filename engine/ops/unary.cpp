// Elementwise functions of one Var (and pow, whose exponent may be a Var too).
//
// For y = f(x) applied elementwise, each y_i depends on x_i alone, so the chain rule
// is a product per element: dL/dx = dL/dy ⊙ f'(x). Where f'(x) is cheaper to write with
// y than with x (exp, tanh, sigmoid, sqrt), the backward keeps y and lets x go.
#include "engine/ops.h"

namespace nce {

// y = exp(x):   dy/dx = exp(x) = y, so dL/dx = dL/dy ⊙ y. The backward keeps y only.
Var exp(const Var& x) {
    check_floating(x.value(), "exp", "input");
    Tensor y = exp(x.value());
    return Var::from_op("exp", y, {x}, [y](const Tensor& dy) -> Grads { return {dy * y}; });
}

// y = log(x):   dy/dx = 1/x, so dL/dx = dL/dy / x. The backward keeps x.
// x <= 0 gives nan or -inf, as the IEEE log does.
Var log(const Var& x) {
    check_floating(x.value(), "log", "input");
    return Var::from_op("log", log(x.value()), {x}, [xv = x.value()](const Tensor& dy) -> Grads { return {dy / xv}; });
}

// y = sqrt(x):   dy/dx = 1 / (2 sqrt(x)) = 0.5 / y, so dL/dx = 0.5 · dL/dy / y.
// The backward keeps y only. At x = 0 the gradient is inf, as the derivative is.
Var sqrt(const Var& x) {
    check_floating(x.value(), "sqrt", "input");
    Tensor y = sqrt(x.value());
    return Var::from_op("sqrt", y, {x}, [y](const Tensor& dy) -> Grads { return {dy / y * 0.5}; });
}

// y = tanh(x):   dy/dx = 1 - tanh(x)^2 = 1 - y^2, so dL/dx = dL/dy ⊙ (1 - y^2).
// The backward keeps y only.
Var tanh(const Var& x) {
    check_floating(x.value(), "tanh", "input");
    Tensor y = tanh(x.value());
    return Var::from_op("tanh", y, {x}, [y](const Tensor& dy) -> Grads { return {dy * (1.0 - square(y))}; });
}

// y = sigmoid(x) = 1 / (1 + exp(-x)):
//   dy/dx = exp(-x) / (1 + exp(-x))^2 = y (1 - y), so dL/dx = dL/dy ⊙ y ⊙ (1 - y).
// The backward keeps y only. The forward never overflows (see UnaryOp::Sigmoid).
Var sigmoid(const Var& x) {
    check_floating(x.value(), "sigmoid", "input");
    Tensor y = sigmoid(x.value());
    return Var::from_op("sigmoid", y, {x}, [y](const Tensor& dy) -> Grads { return {dy * y * (1.0 - y)}; });
}

// y = relu(x) = max(x, 0):   dy/dx = 1 where x > 0, else 0 (we take 0 at the kink x = 0),
// so dL/dx = dL/dy ⊙ step(x). y > 0 exactly where x > 0 (elsewhere y = 0), so the backward
// keeps y only and selects: dL/dx = dL/dy where y != 0, else 0 (one pass).
Var relu(const Var& x) {
    check_floating(x.value(), "relu", "input");
    Tensor y = relu(x.value());
    return Var::from_op("relu", y, {x}, [y](const Tensor& dy) -> Grads { return {keep_where(dy, y, 0.0)}; });
}

// y = x^p for a constant p:   dy/dx = p x^(p-1), so dL/dx = p · dL/dy ⊙ x^(p-1).
// The backward keeps x. For p = 0, y = 1 and the gradient is exactly 0 (also at x = 0,
// where p x^(p-1) would read 0 · inf). A negative x with a fractional p gives nan.
Var pow(const Var& x, double exponent) {
    check_floating(x.value(), "pow", "base");
    return Var::from_op("pow", pow(x.value(), exponent), {x},
        [xv = x.value(), exponent](const Tensor& dy) -> Grads {
            if (exponent == 0.0) return {zeros_like(xv)};
            return {dy * pow(xv, exponent - 1.0) * exponent};
        });
}

// y = b^e elementwise, with broadcasting      b: [..b]   e: [..e]   y: broadcast shape
//
//   dy/db = e b^(e-1)              so dL/db = sum_to(dL/dy ⊙ e ⊙ b^(e-1), shape of b)
//   dy/de = b^e log(b) = y log(b)  so dL/de = sum_to(dL/dy ⊙ y ⊙ log(b), shape of e)
// log(b) needs b > 0, so when e needs a gradient the forward checks that the base is
// positive. The backward keeps b, e and y.
Var pow(const Var& base, const Var& exponent) {
    check_floating(base.value(), "pow", "base");
    check_floating(exponent.value(), "pow", "exponent");
    check_same_dtype(base.value(), exponent.value(), "pow");
    broadcast_shapes(base.shape(), exponent.shape(), "pow");
    if (exponent.requires_grad() && grad_enabled() && base.value().numel() > 0) {
        double smallest = -max(neg(base.value())).item();
        NCE_CHECK(smallest > 0,
                  "pow: the exponent needs a gradient, which is y·log(base), but the base {} has a value {} <= 0; "
                  "keep the base positive or pass the exponent as a constant",
                  shape_string(base.shape()), smallest);
    }
    Tensor y = pow(base.value(), exponent.value());
    return Var::from_op("pow", y, {base, exponent},
        [bv = base.value(), ev = exponent.value(), y](const Tensor& dy) -> Grads {
            Tensor dbase = dy * ev * pow(bv, ev - 1.0);  // broadcast shape
            Tensor dexponent = dy * y * log(bv);        // broadcast shape
            return {sum_to(dbase, bv.shape()), sum_to(dexponent, ev.shape())};
        });
}

// GELU, y = x Phi(x) with Phi the standard normal CDF (Erf), or its tanh approximation
//   y = 0.5 x (1 + tanh(u)),  u = sqrt(2/pi) (x + 0.044715 x^3)      (Tanh).
//
// Erf:  dy/dx = Phi(x) + x phi(x),  phi the standard normal density.
// Tanh: dy/dx = 0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) · sqrt(2/pi) (1 + 3 · 0.044715 x^2).
// Both derivatives are backend kernels (UnaryOp::GeluErfDerivative, GeluTanhDerivative),
// so dL/dx = dL/dy ⊙ gelu'(x). The backward keeps x.
Var gelu(const Var& x, GeluApproximation approximation) {
    check_floating(x.value(), "gelu", "input");
    bool erf_form = approximation == GeluApproximation::Erf;
    UnaryOp function = erf_form ? UnaryOp::GeluErf : UnaryOp::GeluTanh;
    UnaryOp derivative = erf_form ? UnaryOp::GeluErfDerivative : UnaryOp::GeluTanhDerivative;
    return Var::from_op("gelu", unary(function, x.value()), {x},
        [xv = x.value(), derivative](const Tensor& dy) -> Grads { return {dy * unary(derivative, xv)}; });
}

}  // namespace nce
