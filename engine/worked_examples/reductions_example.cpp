// The reductions' worked examples and sum_to's (docs/derivations/ops/reductions.md), all on
// an x [2, 3]: sum along axis 1 with keepdim, mean along axis 0, max along axis 1 with a tie,
// and the two broadcasts whose backward is sum_to: x + b with b [3], and x ⊙ s with s [2, 1].
#include "engine/ops.h"
#include "engine/tensor_math.h"
#include "engine/worked_examples/op_worked_example.h"

namespace nce::worked_examples {

namespace {

Tensor x_2x3() { return float64_matrix({{1.0, 3.0, -2.0}, {2.0, 0.5, 2.0}}); }  // row 1: a tie at 2

// W [rows, 1] (or [rows]) copied along the columns: the broadcast the backward does.
Tensor copied_along_columns(const Tensor& W, int64_t rows, int64_t columns) {
    return Tensor::zeros({rows, columns}, Dtype::Float64) + W.reshape({rows, 1});
}

}  // namespace

// Y = sum_j x[:, j], keepdim     x: [2, 3]   Y, W: [2, 1]
OpWorkedExample sum_worked_example() {
    OpWorkedExample example;
    example.name = "sum";
    example.page = "reductions";
    example.parameters = {{"axis", "1"}, {"keepdim", "true"}};
    example.inputs = {{"x", x_2x3()}};
    example.upstream = float64_matrix({{2.0}, {-1.0}});
    example.forward = [](const std::vector<Var>& x) { return sum(x[0], 1, /*keepdim=*/true); };
    example.steps = [](const std::vector<Tensor>& inputs, const Tensor& W) -> std::vector<ExampleStep> {
        const Tensor& x = inputs[0];
        return {{"Y", "x_i0 + x_i1 + x_i2", slice(x, 1, 0, 1) + slice(x, 1, 1, 2) + slice(x, 1, 2, 3)},
                {"dx", "W_i copied along axis 1", copied_along_columns(W, 2, 3)}};
    };
    return example;
}

// Y = (1/2) sum_i x[i, :]     x: [2, 3]   Y, W: [3]
OpWorkedExample mean_worked_example() {
    OpWorkedExample example;
    example.name = "mean";
    example.page = "reductions";
    example.parameters = {{"axis", "0"}, {"keepdim", "false"}, {"n", "2"}};
    example.inputs = {{"x", x_2x3()}};
    example.upstream = float64_vector({1.0, -2.0, 4.0});
    example.forward = [](const std::vector<Var>& x) { return mean(x[0], 0); };
    example.steps = [](const std::vector<Tensor>& inputs, const Tensor& W) -> std::vector<ExampleStep> {
        const Tensor& x = inputs[0];
        Tensor row_0 = slice(x, 0, 0, 1).reshape({3}), row_1 = slice(x, 0, 1, 2).reshape({3});
        Tensor W_row = W.reshape({1, 3});
        return {{"Y", "(x_0j + x_1j) / 2", (row_0 + row_1) / 2.0},
                {"dx", "W_j / 2 copied along axis 0", concat({W_row, W_row}, 0) / 2.0}};
    };
    return example;
}

// Y = max_j x[:, j], argmax a (the first on a tie)     x: [2, 3]   Y, W, a: [2]
OpWorkedExample max_worked_example() {
    OpWorkedExample example;
    example.name = "max";
    example.page = "reductions";
    example.parameters = {{"axis", "1"}, {"keepdim", "false"}, {"ties", "the first maximum"}};
    example.inputs = {{"x", x_2x3()}};
    example.upstream = float64_vector({2.0, -1.0});
    example.forward = [](const std::vector<Var>& x) { return max(x[0], 1); };
    example.steps = [](const std::vector<Tensor>& inputs, const Tensor& W) -> std::vector<ExampleStep> {
        // Scan each row left to right; a later entry replaces the best only when strictly greater.
        std::vector<double> x = inputs[0].to_vector(), w = W.to_vector(), maxima, dx(x.size(), 0.0);
        std::vector<int64_t> argmax;
        for (int64_t i = 0; i < 2; ++i) {
            int64_t best = 0;
            for (int64_t j = 1; j < 3; ++j)
                if (x[static_cast<size_t>(i * 3 + j)] > x[static_cast<size_t>(i * 3 + best)]) best = j;
            argmax.push_back(best);
            maxima.push_back(x[static_cast<size_t>(i * 3 + best)]);
            dx[static_cast<size_t>(i * 3 + best)] = w[static_cast<size_t>(i)];
        }
        return {{"a", "argmax_j x_ij, the first on a tie", Tensor::from_indices(argmax, {2})},
                {"Y", "x_i,a_i", Tensor::from_vector(maxima, {2}, Dtype::Float64)},
                {"dx", "W_i at (i, a_i), 0 elsewhere", Tensor::from_vector(dx, {2, 3}, Dtype::Float64)}};
    };
    return example;
}

// Y = x + b, b broadcast along axis 0     x, Y, W: [2, 3]   b: [3]
OpWorkedExample broadcast_add_worked_example() {
    OpWorkedExample example;
    example.name = "broadcast_add";
    example.page = "reductions";
    example.parameters = {{"broadcast", "b [3] -> [2, 3] (a missing leading axis)"}};
    example.inputs = {{"x", x_2x3()}, {"b", float64_vector({10.0, 20.0, 30.0})}};
    example.upstream = float64_matrix({{1.0, -1.0, 2.0}, {0.5, 3.0, -2.0}});
    example.forward = [](const std::vector<Var>& x) { return x[0] + x[1]; };
    example.steps = [](const std::vector<Tensor>& inputs, const Tensor& W) -> std::vector<ExampleStep> {
        const Tensor &x = inputs[0], &b = inputs[1];
        Tensor b_copied = concat({b.reshape({1, 3}), b.reshape({1, 3})}, 0);  // [2, 3]
        return {{"b copied", "b as a row, twice", b_copied},
                {"Y", "x + b copied", x + b_copied},
                {"dx", "W   (x is not broadcast)", W},
                {"db", "sum_i W_ij = sum_to(W, [3])", slice(W, 0, 0, 1).reshape({3}) + slice(W, 0, 1, 2).reshape({3})}};
    };
    return example;
}

// Y = x ⊙ s, s broadcast along axis 1     x, Y, W: [2, 3]   s: [2, 1]
OpWorkedExample broadcast_mul_worked_example() {
    OpWorkedExample example;
    example.name = "broadcast_mul";
    example.page = "reductions";
    example.parameters = {{"broadcast", "s [2, 1] -> [2, 3] (a size-1 axis)"}};
    example.inputs = {{"x", x_2x3()}, {"s", float64_matrix({{2.0}, {-1.0}})}};
    example.upstream = float64_matrix({{1.0, -1.0, 2.0}, {0.5, 3.0, -2.0}});
    example.forward = [](const std::vector<Var>& x) { return x[0] * x[1]; };
    example.steps = [](const std::vector<Tensor>& inputs, const Tensor& W) -> std::vector<ExampleStep> {
        const Tensor &x = inputs[0], &s = inputs[1];
        Tensor s_copied = copied_along_columns(s, 2, 3);  // [2, 3]
        Tensor W_times_x = W * x;                         // [2, 3]: each copy's gradient
        return {{"s copied", "s_i in every column", s_copied},
                {"Y", "x ⊙ s copied", x * s_copied},
                {"dx", "W ⊙ s copied", W * s_copied},
                {"W ⊙ x", "the gradient of each copy of s", W_times_x},
                {"ds", "sum_j W_ij x_ij = sum_to(W ⊙ x, [2, 1])",
                 slice(W_times_x, 1, 0, 1) + slice(W_times_x, 1, 1, 2) + slice(W_times_x, 1, 2, 3)}};
    };
    return example;
}

}  // namespace nce::worked_examples
