// masked_mean_pool's worked example (docs/derivations/ops/masked_mean_pool.md): B = 2
// sequences of T = 3 tokens of D = 2 features; row 0 has its last token padded (with values
// that must not reach the output), row 1 has three tokens.
#include "engine/ops.h"
#include "engine/tensor_math.h"
#include "engine/worked_examples/op_worked_example.h"

namespace nce::worked_examples {

// y[b,:] = sum_t is_token[b,t] x[b,t,:] / count_b     x: [2, 3, 2]   mask: [2, 3]   y, W: [2, 2]
OpWorkedExample masked_mean_pool_worked_example() {
    OpWorkedExample example;
    example.name = "masked_mean_pool";
    example.parameters = {{"B", "2"}, {"T", "3"}, {"D", "2"}, {"mask", "1 = token, 0 = padding"}};
    Tensor x = Tensor::from_vector({1.0, 2.0, 3.0, -2.0, 9.0, 9.0,    // row 0: two tokens, then padding (9, 9)
                                    0.0, 1.0, 2.0, 2.0, -1.0, 3.0},  // row 1: three tokens
                                   {2, 3, 2}, Dtype::Float64);
    example.inputs = {{"x", x}, {"mask", float64_matrix({{1.0, 1.0, 0.0}, {1.0, 1.0, 1.0}}), false}};
    example.upstream = float64_matrix({{1.0, -1.0}, {0.5, 2.0}});
    example.forward = [](const std::vector<Var>& inputs) { return masked_mean_pool(inputs[0], inputs[1].value()); };
    example.steps = [](const std::vector<Tensor>& inputs, const Tensor& W) -> std::vector<ExampleStep> {
        const Tensor &x = inputs[0], &mask = inputs[1];
        const int64_t batch = x.size(0), tokens = x.size(1), features = x.size(2);
        Tensor is_token = keep_where(full_like(mask, 1.0), mask, 0.0);  // [B, T]
        Tensor count = sum(is_token, 1, true);                          // [B, 1]
        Tensor weight = is_token / count;                               // [B, T]
        Tensor weight_column = weight.reshape({batch, tokens, 1});      // [B, T, 1]
        // Padding is selected away (keep_where), as the op does: 0 · x would still read x.
        Tensor kept_x = keep_where(x, is_token.reshape({batch, tokens, 1}), 0.0);  // [B, T, D]
        return {{"is_token", "1 where mask != 0, else 0", is_token},
                {"count", "sum_t is_token[b,t]   (kept tokens per row)", count},
                {"weight", "is_token[b,t] / count_b", weight},
                {"Y", "sum_t weight[b,t] x[b,t,:]   (padding selected away)", sum(weight_column * kept_x, 1)},
                {"dx", "weight[b,t] W[b,:]   (0 at padding)", weight_column * W.reshape({batch, 1, features})}};
    };
    return example;
}

}  // namespace nce::worked_examples
