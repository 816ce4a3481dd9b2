// softmax's and log_softmax's worked examples (docs/derivations/ops/softmax.md). Row 1 of x
// is row 0 plus 1000: exp(1002) overflows float64, so the rows are shifted by their maximum
// first, and the two rows have the same softmax.
#include "engine/ops.h"
#include "engine/tensor_math.h"
#include "engine/worked_examples/op_worked_example.h"

namespace nce::worked_examples {

namespace {

Tensor logits_2x3() { return float64_matrix({{1.0, 2.0, 0.5}, {1001.0, 1002.0, 1000.5}}); }
Tensor softmax_upstream_2x3() { return float64_matrix({{1.0, 0.0, -1.0}, {0.5, 2.0, 0.0}}); }

}  // namespace

// y = softmax(x) over the last axis     x, y, W: [2, 3]
OpWorkedExample softmax_worked_example() {
    OpWorkedExample example;
    example.name = "softmax";
    example.parameters = {{"axis", "last"}};
    example.inputs = {{"x", logits_2x3()}};
    example.upstream = softmax_upstream_2x3();
    example.forward = [](const std::vector<Var>& x) { return softmax(x[0]); };
    example.steps = [](const std::vector<Tensor>& inputs, const Tensor& W) -> std::vector<ExampleStep> {
        const Tensor& x = inputs[0];
        Tensor m = max(x, 1, true).values;    // [2, 1]
        Tensor e = exp(x - m);                // [2, 3], every exponent <= 0
        Tensor s = sum(e, 1, true);           // [2, 1]
        Tensor y = e / s;                     // [2, 3]
        Tensor inner = sum(W * y, 1, true);   // <W, y> per row   [2, 1]
        return {{"m", "max_j x_j per row", m},
                {"e", "exp(x - m)", e},
                {"s", "sum_j e_j per row", s},
                {"y", "e / s", y},
                {"<W,y>", "sum_j W_j y_j per row", inner},
                {"dx", "y ⊙ (W - <W,y>)", y * (W - inner)}};
    };
    return example;
}

// y = log_softmax(x) over the last axis  x, y, W: [2, 3]
OpWorkedExample log_softmax_worked_example() {
    OpWorkedExample example;
    example.name = "log_softmax";
    example.page = "softmax";
    example.parameters = {{"axis", "last"}};
    example.inputs = {{"x", logits_2x3()}};
    example.upstream = softmax_upstream_2x3();
    example.forward = [](const std::vector<Var>& x) { return log_softmax(x[0]); };
    example.steps = [](const std::vector<Tensor>& inputs, const Tensor& W) -> std::vector<ExampleStep> {
        const Tensor& x = inputs[0];
        Tensor m = max(x, 1, true).values;               // [2, 1]
        Tensor lse = m + log(sum(exp(x - m), 1, true));  // log sum_j exp(x_j)   [2, 1]
        Tensor y = x - lse;                              // [2, 3]
        Tensor p = exp(y);                               // softmax   [2, 3]
        Tensor total = sum(W, 1, true);                  // sum_j W_j per row   [2, 1]
        return {{"m", "max_j x_j per row", m},
                {"lse", "m + log sum_j exp(x_j - m)", lse},
                {"y", "x - lse", y},
                {"p", "exp(y) = softmax(x)", p},
                {"sum W", "sum_j W_j per row", total},
                {"dx", "W - p ⊙ sum W", W - p * total}};
    };
    return example;
}

}  // namespace nce::worked_examples
