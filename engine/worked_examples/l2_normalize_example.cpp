// l2_normalize's worked examples (docs/derivations/ops/l2_normalize.md): two rows of 3 with
// norms 3 and 5 and the default eps, and the same first row beside a short row (norm 0.5)
// under eps = 1, where the denominator is eps and the gradient is W / eps.
#include <cmath>

#include "engine/ops.h"
#include "engine/tensor_math.h"
#include "engine/worked_examples/op_worked_example.h"

namespace nce::worked_examples {

namespace {

// The page's steps for y = x / max(||x||, eps) row by row, and dx from W.
//   x, W: [N, D]   norm, denominator, uses_norm, <y, W>: [N, 1]
std::vector<ExampleStep> l2_normalize_steps(const Tensor& x, const Tensor& W, double eps) {
    Tensor norm = sqrt(sum(x * x, 1, true));                  // [N, 1]
    Tensor denominator = maximum(norm, full_like(norm, eps));  // [N, 1]
    Tensor uses_norm = 1.0 - greater(full_like(norm, eps), norm);  // [N, 1]: 1 where norm >= eps
    Tensor y = x / denominator;                                // [N, D]
    Tensor y_dot_W = sum(y * W, 1, true);                      // [N, 1]
    Tensor dx = (W - uses_norm * y * y_dot_W) / denominator;   // [N, D]
    return {{"norm", "||x_i|| = sqrt(sum_j x_ij^2)", norm},
            {"denominator", "max(norm, eps)", denominator},
            {"uses_norm", "1 where norm >= eps, else 0", uses_norm},
            {"Y", "x / denominator", y},
            {"y·W", "<y_i, W_i>", y_dot_W},
            {"dx", "(W - uses_norm · y <y, W>) / denominator", dx},
            {"y·dx", "<y_i, dx_i>   (0 where uses_norm = 1)", sum(y * dx, 1, true)}};
}

}  // namespace

// y = x / ||x|| row by row    x, y, W: [2, 3]   eps = 1e-12 (the default)
OpWorkedExample l2_normalize_worked_example() {
    OpWorkedExample example;
    example.name = "l2_normalize";
    example.parameters = {{"eps", "1e-12 (the default)"}};
    example.inputs = {{"x", float64_matrix({{1.0, 2.0, 2.0}, {0.0, -3.0, 4.0}})}};
    example.upstream = float64_matrix({{1.0, 0.0, -1.0}, {2.0, 1.0, 0.5}});
    example.forward = [](const std::vector<Var>& inputs) { return l2_normalize(inputs[0]); };
    example.steps = [](const std::vector<Tensor>& inputs, const Tensor& W) {
        return l2_normalize_steps(inputs[0], W, 1e-12);
    };
    return example;
}

// y = x / max(||x||, 1) row by row: row 0 (norm 3) divides by its norm, row 1 (norm 0.5) by eps.
OpWorkedExample l2_normalize_eps_worked_example() {
    OpWorkedExample example;
    example.name = "l2_normalize_eps";
    example.page = "l2_normalize";
    example.parameters = {{"eps", "1"}};
    example.inputs = {{"x", float64_matrix({{1.0, 2.0, 2.0}, {0.3, 0.0, -0.4}})}};
    example.upstream = float64_matrix({{1.0, 0.0, -1.0}, {2.0, 1.0, 0.5}});
    example.forward = [](const std::vector<Var>& inputs) { return l2_normalize(inputs[0], 1.0); };
    example.steps = [](const std::vector<Tensor>& inputs, const Tensor& W) {
        return l2_normalize_steps(inputs[0], W, 1.0);
    };
    return example;
}

}  // namespace nce::worked_examples
