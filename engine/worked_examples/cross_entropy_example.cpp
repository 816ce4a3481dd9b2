// cross_entropy's worked example (docs/derivations/ops/cross_entropy.md): N = 2 rows of
// C = 3 logits and their target classes. The output is the scalar loss, so L = Y and no
// upstream weight is needed.
#include "engine/ops.h"
#include "engine/tensor_math.h"
#include "engine/worked_examples/op_worked_example.h"

namespace nce::worked_examples {

// L = -(1/N) sum_i log softmax(logits_i)[t_i]     logits: [2, 3]   targets: int64 [2]   L: []
OpWorkedExample cross_entropy_worked_example() {
    OpWorkedExample example;
    example.name = "cross_entropy";
    example.parameters = {{"reduction", "mean over the N rows"}};
    example.inputs = {{"logits", float64_matrix({{2.0, 1.0, -1.0}, {0.5, 0.5, 3.0}})},
                      {"targets", Tensor::from_indices({0, 1}, {2}), false}};
    example.forward = [](const std::vector<Var>& x) { return cross_entropy(x[0], x[1].value()); };
    example.steps = [](const std::vector<Tensor>& inputs, const Tensor&) -> std::vector<ExampleStep> {
        const Tensor& logits = inputs[0];
        std::vector<int64_t> targets = inputs[1].to_indices();
        int64_t N = logits.size(0), C = logits.size(1);
        Tensor m = max(logits, 1, true).values;                           // [N, 1]
        Tensor log_P = logits - m - log(sum(exp(logits - m), 1, true));   // [N, C]
        Tensor P = exp(log_P);                                            // [N, C]
        std::vector<double> one_hot(static_cast<size_t>(N * C), 0.0), picked(log_P.to_vector()), row_loss;
        for (int64_t i = 0; i < N; ++i) {
            one_hot[static_cast<size_t>(i * C + targets[i])] = 1.0;
            row_loss.push_back(-picked[static_cast<size_t>(i * C + targets[i])]);
        }
        Tensor Y = Tensor::from_vector(one_hot, {N, C}, Dtype::Float64);      // [N, C]
        Tensor losses = Tensor::from_vector(row_loss, {N}, Dtype::Float64);   // [N]
        return {{"log P", "logits - m - log sum_j exp(logits_j - m), m the row max", log_P},
                {"P", "exp(log P)", P},
                {"Y", "one-hot of the targets", Y},
                {"l_i", "-log P_i,t_i", losses},
                {"L", "(1/N) sum_i l_i", mean(losses)},
                {"dlogits", "(P - Y) / N", (P - Y) / static_cast<double>(N)}};
    };
    return example;
}

}  // namespace nce::worked_examples
