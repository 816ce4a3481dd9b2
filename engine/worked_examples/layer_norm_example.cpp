// layer_norm's worked example (docs/derivations/ops/layer_norm.md): two rows of D = 3, a
// weight and a bias; every quantity of the page's walk-through, forward and backward.
#include "engine/ops.h"
#include "engine/tensor_math.h"
#include "engine/worked_examples/op_worked_example.h"

namespace nce::worked_examples {

// y = (x - mean) rstd ⊙ weight + bias, per row     x, y, W: [2, 3]   weight, bias: [3]
OpWorkedExample layer_norm_worked_example() {
    constexpr double eps = 1e-5;
    OpWorkedExample example;
    example.name = "layer_norm";
    example.parameters = {{"eps", "1e-05"}, {"axis", "last (D = 3)"}};
    example.inputs = {{"x", float64_matrix({{1.0, 2.0, 6.0}, {2.0, -1.0, 0.5}})},
                      {"weight", float64_vector({1.0, 0.5, 2.0})},
                      {"bias", float64_vector({0.0, 1.0, -1.0})}};
    example.upstream = float64_matrix({{1.0, -1.0, 0.5}, {0.0, 2.0, 1.0}});
    example.forward = [](const std::vector<Var>& x) { return layer_norm(x[0], x[1], x[2], eps); };
    example.steps = [](const std::vector<Tensor>& inputs, const Tensor& W) -> std::vector<ExampleStep> {
        const Tensor &x = inputs[0], &weight = inputs[1], &bias = inputs[2];
        Tensor mu = mean(x, 1, true);                   // [2, 1]
        Tensor centred = x - mu;                        // [2, 3]
        Tensor var = mean(square(centred), 1, true);    // biased: divided by D   [2, 1]
        Tensor rstd = full_like(var, 1.0) / sqrt(var + eps);  // [2, 1]
        Tensor xhat = centred * rstd;                   // [2, 3]
        Tensor y = xhat * weight + bias;                // [2, 3]
        Tensor g = W * weight;                          // dL/dxhat   [2, 3]
        Tensor g_mean = mean(g, 1, true);               // [2, 1]
        Tensor g_xhat_mean = mean(g * xhat, 1, true);   // [2, 1]
        return {{"mean", "(1/D) sum_j x_j", mu},
                {"var", "(1/D) sum_j (x_j - mean)^2", var},
                {"rstd", "1 / sqrt(var + eps)", rstd},
                {"xhat", "(x - mean) rstd", xhat},
                {"y", "xhat ⊙ weight + bias", y},
                {"g", "dL/dxhat = W ⊙ weight", g},
                {"mean(g)", "(1/D) sum_j g_j", g_mean},
                {"mean(g xhat)", "(1/D) sum_j g_j xhat_j", g_xhat_mean},
                {"dx", "rstd (g - mean(g) - xhat mean(g xhat))", rstd * (g - g_mean - xhat * g_xhat_mean)},
                {"dweight", "sum over rows of W ⊙ xhat", sum(W * xhat, 0)},
                {"dbias", "sum over rows of W", sum(W, 0)}};
    };
    return example;
}

}  // namespace nce::worked_examples
