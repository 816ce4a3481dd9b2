// matmul's worked examples (docs/derivations/ops/matmul.md): the 2-D product, one with the
// second operand transposed (A B^T, as affine and the losses' q p^T use it), and a batched
// A with a shared 2-D B, whose gradient sums over the batch.
#include "engine/ops.h"
#include "engine/tensor_math.h"
#include "engine/worked_examples/op_worked_example.h"

namespace nce::worked_examples {

namespace {

Tensor A_2x3() { return float64_matrix({{1.0, 2.0, 0.0}, {-1.0, 0.5, 3.0}}); }

}  // namespace

// Y = A B      A: [2, 3]   B: [3, 2]   Y, W: [2, 2]
OpWorkedExample matmul_worked_example() {
    OpWorkedExample example;
    example.name = "matmul";
    example.parameters = {{"transpose", "none"}};
    example.inputs = {{"A", A_2x3()}, {"B", float64_matrix({{0.5, -1.0}, {2.0, 0.0}, {1.0, 1.5}})}};
    example.upstream = float64_matrix({{1.0, -1.0}, {0.5, 2.0}});
    example.forward = [](const std::vector<Var>& x) { return matmul(x[0], x[1]); };
    example.steps = [](const std::vector<Tensor>& x, const Tensor& W) -> std::vector<ExampleStep> {
        const Tensor &A = x[0], &B = x[1];
        return {{"Y", "A B", matmul(A, B)},
                {"dA", "W B^T", matmul(W, transpose(B, 0, 1))},
                {"dB", "A^T W", matmul(transpose(A, 0, 1), W)}};
    };
    return example;
}

// Y = A B^T    A: [2, 3]   B: [2, 3]   Y, W: [2, 2]
OpWorkedExample matmul_transposed_worked_example() {
    OpWorkedExample example;
    example.name = "matmul_transposed";
    example.page = "matmul";
    example.parameters = {{"transpose", "second (Y = A B^T)"}};
    example.inputs = {{"A", A_2x3()}, {"B", float64_matrix({{0.5, 2.0, 1.0}, {-1.0, 0.0, 1.5}})}};
    example.upstream = float64_matrix({{1.0, -1.0}, {0.5, 2.0}});
    example.forward = [](const std::vector<Var>& x) { return matmul(x[0], x[1], Transpose::Second); };
    example.steps = [](const std::vector<Tensor>& x, const Tensor& W) -> std::vector<ExampleStep> {
        const Tensor &A = x[0], &B = x[1];
        Tensor Bt = transpose(B, 0, 1);  // [3, 2]: the B of the first example
        return {{"Y", "A B^T", matmul(A, Bt)},
                {"dA", "W B", matmul(W, B)},
                {"dB", "W^T A", matmul(transpose(W, 0, 1), A)}};
    };
    return example;
}

// Y_b = A_b B   A: [2, 2, 3] (batch 2)   B: [3, 2] shared by the batch   Y, W: [2, 2, 2]
OpWorkedExample matmul_broadcast_worked_example() {
    OpWorkedExample example;
    example.name = "matmul_broadcast";
    example.page = "matmul";
    example.parameters = {{"transpose", "none"}, {"batch", "2, B shared"}};
    Tensor A = Tensor::from_vector({1.0, 2.0, 0.0, -1.0, 0.5, 3.0,    // A_0: the A of the first example
                                    0.0, 1.0, -2.0, 2.0, 1.0, 1.0},  // A_1
                                   {2, 2, 3}, Dtype::Float64);
    example.inputs = {{"A", A}, {"B", float64_matrix({{0.5, -1.0}, {2.0, 0.0}, {1.0, 1.5}})}};
    example.upstream = Tensor::from_vector({1.0, -1.0, 0.5, 2.0,  // W_0
                                            1.0, 0.0, 0.0, -1.0},  // W_1
                                           {2, 2, 2}, Dtype::Float64);
    example.forward = [](const std::vector<Var>& x) { return matmul(x[0], x[1]); };
    example.steps = [](const std::vector<Tensor>& x, const Tensor& W) -> std::vector<ExampleStep> {
        const Tensor &A = x[0], &B = x[1];
        Tensor Bt = transpose(B, 0, 1);  // [2, 3]
        std::vector<ExampleStep> steps;
        std::vector<Tensor> dY_rows, dA_rows;
        Tensor dB;
        for (int64_t b = 0; b < 2; ++b) {
            Tensor A_b = slice(A, 0, b, b + 1).reshape({2, 3});
            Tensor W_b = slice(W, 0, b, b + 1).reshape({2, 2});
            dA_rows.push_back(matmul(W_b, Bt));  // [2, 3]
            Tensor contribution = matmul(transpose(A_b, 0, 1), W_b);  // [3, 2]
            steps.push_back({fmt::format("dB_{}", b), fmt::format("A_{}^T W_{}   (batch entry {}'s share)", b, b, b),
                             contribution});
            dB = dB.defined() ? dB + contribution : contribution;
        }
        steps.insert(steps.begin(), {"Y", "A_b B for each b", matmul(A, B)});
        steps.insert(steps.begin() + 1, {"dA", "W_b B^T for each b", stack(dA_rows, 0)});
        steps.push_back({"dB", "dB_0 + dB_1   (summed over the batch)", dB});
        return steps;
    };
    return example;
}

}  // namespace nce::worked_examples
