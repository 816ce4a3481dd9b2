// gelu's worked examples (docs/derivations/ops/gelu.md): the erf form and the tanh
// approximation on the same x and W. The steps use std::erf and std::tanh entry by entry,
// apart from the backend kernels the op runs (UnaryOp::GeluErf, GeluTanhDerivative, ...).
#include <cmath>
#include <numbers>

#include "engine/ops.h"
#include "engine/tensor_math.h"
#include "engine/worked_examples/op_worked_example.h"

namespace nce::worked_examples {

namespace {

Tensor x_2x3() { return float64_matrix({{-2.0, -0.5, 0.0}, {0.5, 1.0, 3.0}}); }
Tensor gelu_upstream_2x3() { return float64_matrix({{1.0, -1.0, 0.5}, {2.0, 1.0, -0.5}}); }

// f applied to every entry of a float64 tensor.
template <typename Function>
Tensor entrywise(const Tensor& x, Function f) {
    std::vector<double> values = x.to_vector();
    for (double& value : values) value = f(value);
    return Tensor::from_vector(values, x.shape(), Dtype::Float64);
}

constexpr double kTanhCubic = 0.044715;  // the cubic coefficient of the tanh approximation

}  // namespace

// y = x Phi(x)     x, y, W: [2, 3]
OpWorkedExample gelu_worked_example() {
    OpWorkedExample example;
    example.name = "gelu";
    example.parameters = {{"approximation", "erf (exact)"}};
    example.inputs = {{"x", x_2x3()}};
    example.upstream = gelu_upstream_2x3();
    example.forward = [](const std::vector<Var>& x) { return gelu(x[0], GeluApproximation::Erf); };
    example.steps = [](const std::vector<Tensor>& inputs, const Tensor& W) -> std::vector<ExampleStep> {
        const Tensor& x = inputs[0];
        Tensor Phi = entrywise(x, [](double v) { return 0.5 * (1.0 + std::erf(v / std::numbers::sqrt2)); });
        Tensor phi = entrywise(x, [](double v) { return std::exp(-0.5 * v * v) / std::sqrt(2.0 * std::numbers::pi); });
        Tensor derivative = Phi + x * phi;  // [2, 3]
        return {{"Phi", "0.5 (1 + erf(x / sqrt 2))", Phi},
                {"y", "x Phi", x * Phi},
                {"phi", "exp(-x^2 / 2) / sqrt(2 pi)", phi},
                {"gelu'", "Phi + x phi", derivative},
                {"dx", "W ⊙ gelu'", W * derivative}};
    };
    return example;
}

// y = 0.5 x (1 + tanh u),  u = sqrt(2/pi) (x + 0.044715 x^3)     x, y, W: [2, 3]
OpWorkedExample gelu_tanh_worked_example() {
    OpWorkedExample example;
    example.name = "gelu_tanh";
    example.page = "gelu";
    example.parameters = {{"approximation", "tanh"}};
    example.inputs = {{"x", x_2x3()}};
    example.upstream = gelu_upstream_2x3();
    example.forward = [](const std::vector<Var>& x) { return gelu(x[0], GeluApproximation::Tanh); };
    example.steps = [](const std::vector<Tensor>& inputs, const Tensor& W) -> std::vector<ExampleStep> {
        const Tensor& x = inputs[0];
        const double c = std::sqrt(2.0 / std::numbers::pi);
        Tensor u = entrywise(x, [c](double v) { return c * (v + kTanhCubic * v * v * v); });
        Tensor t = entrywise(u, [](double v) { return std::tanh(v); });
        Tensor du = entrywise(x, [c](double v) { return c * (1.0 + 3.0 * kTanhCubic * v * v); });
        Tensor derivative = 0.5 * (1.0 + t) + 0.5 * x * (1.0 - square(t)) * du;  // [2, 3]
        return {{"u", "sqrt(2/pi) (x + 0.044715 x^3)", u},
                {"t", "tanh u", t},
                {"y", "0.5 x (1 + t)", 0.5 * x * (1.0 + t)},
                {"du/dx", "sqrt(2/pi) (1 + 3 0.044715 x^2)", du},
                {"gelu'", "0.5 (1 + t) + 0.5 x (1 - t^2) du/dx", derivative},
                {"dx", "W ⊙ gelu'", W * derivative}};
    };
    return example;
}

}  // namespace nce::worked_examples
