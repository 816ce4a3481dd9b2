// The attention ops' worked examples (docs/derivations/ops/attention.md): scaled dot-product
// attention for one head, T = 3 tokens of dh = 2 with the last key padded, and packed
// multi-head attention with 2 heads whose head 0 is that same example.
#include <fmt/core.h>

#include <cmath>
#include <limits>

#include "engine/ops.h"
#include "engine/tensor_math.h"
#include "engine/worked_examples/op_worked_example.h"

namespace nce::worked_examples {

namespace {

// One head's forward and backward, as the page derives them.
//   Q: [Tq, dh]   K, V: [Tk, dh]   key_is_real: [1, Tk] (1 = real key)   dO: [Tq, dh]
struct HeadSteps {
    Tensor S, P, O, dP, dS, dQ, dK, dV;
};

HeadSteps attention_head(const Tensor& Q, const Tensor& K, const Tensor& V, const Tensor& key_is_real,
                         const Tensor& dO) {
    const double scale = 1.0 / std::sqrt(static_cast<double>(Q.size(1)));
    HeadSteps h;
    // S = Q K^T / sqrt(dh), -inf at the padded keys.                               [Tq, Tk]
    h.S = keep_where(matmul(Q, K, Transpose::Second) * scale, key_is_real, -std::numeric_limits<double>::infinity());
    // P = softmax of each row: exp(S - row max) / its row sum; exp(-inf) = 0.        [Tq, Tk]
    Tensor e = exp(h.S - max(h.S, 1, true).values);
    h.P = e / sum(e, 1, true);
    h.O = matmul(h.P, V);                                                      // [Tq, dh]
    h.dV = matmul(h.P, dO, Transpose::First);                                  // P^T dO   [Tk, dh]
    h.dP = matmul(dO, V, Transpose::Second);                                   // dO V^T   [Tq, Tk]
    h.dS = h.P * (h.dP - sum(h.dP * h.P, 1, true));                            // [Tq, Tk]
    h.dQ = matmul(h.dS, K) * scale;                                            // [Tq, dh]
    h.dK = matmul(h.dS, Q, Transpose::First) * scale;                          // [Tk, dh]
    return h;
}

// Columns [first, first + count) of a [T, C] matrix.
Tensor columns(const Tensor& matrix, int64_t first, int64_t count) { return slice(matrix, 1, first, first + count); }

}  // namespace

// O = softmax(q k^T / sqrt(2), key 2 masked) v    q, k, v, O, W: [1, 1, 3, 2]   key_padding_mask: [1, 3]
OpWorkedExample attention_worked_example() {
    OpWorkedExample example;
    example.name = "attention";
    example.parameters = {{"B", "1"}, {"H", "1"}, {"Tq = Tk", "3"}, {"dh", "2"}, {"scale", "1/sqrt(2)"}};
    const Shape shape{1, 1, 3, 2};
    example.inputs = {
        {"q", Tensor::from_vector({1.0, 0.0, 0.0, 1.0, 1.0, 1.0}, shape, Dtype::Float64)},
        {"k", Tensor::from_vector({1.0, 0.0, 0.0, 2.0, -1.0, 1.0}, shape, Dtype::Float64)},
        {"v", Tensor::from_vector({1.0, 2.0, 3.0, -1.0, 5.0, 5.0}, shape, Dtype::Float64)},
        {"key_padding_mask", float64_matrix({{1.0, 1.0, 0.0}}), false}};
    example.upstream = Tensor::from_vector({1.0, 0.0, 0.0, 1.0, 1.0, -1.0}, shape, Dtype::Float64);
    example.forward = [](const std::vector<Var>& x) {
        return scaled_dot_product_attention(x[0], x[1], x[2], x[3].value());
    };
    example.steps = [shape](const std::vector<Tensor>& x, const Tensor& W) -> std::vector<ExampleStep> {
        auto matrix = [](const Tensor& t) { return t.reshape({t.size(2), t.size(3)}); };  // [1, 1, T, dh] -> [T, dh]
        HeadSteps h = attention_head(matrix(x[0]), matrix(x[1]), matrix(x[2]), x[3], matrix(W));
        return {{"S", "q k^T / sqrt(dh)   (-inf at a masked key)", h.S},
                {"P", "softmax of each row of S", h.P},
                {"Y", "P v", h.O.reshape(shape)},
                {"dv", "P^T W", h.dV.reshape(shape)},
                {"dP", "W v^T", h.dP},
                {"dS", "P ⊙ (dP - rowsum(dP ⊙ P))", h.dS},
                {"dq", "dS k / sqrt(dh)", h.dQ.reshape(shape)},
                {"dk", "dS^T q / sqrt(dh)", h.dK.reshape(shape)}};
    };
    return example;
}

// Two heads of dh = 2 on packed qkv [1, 3, 12] = [q_0 q_1 | k_0 k_1 | v_0 v_1] (D = 4),
// key 2 masked, no dropout; out, W: [1, 3, 4] = [O_0 | O_1]. Head 0 is the attention example.
OpWorkedExample packed_attention_worked_example() {
    OpWorkedExample example;
    example.name = "packed_attention";
    example.page = "attention";
    example.parameters = {{"B", "1"}, {"T", "3"}, {"heads", "2"}, {"dh", "2"}, {"dropout", "0"}};
    //                                q_0        q_1          k_0         k_1          v_0         v_1
    Tensor qkv = Tensor::from_vector({1.0, 0.0,  0.0, 1.0,    1.0, 0.0,   1.0, 1.0,    1.0, 2.0,   0.0, 1.0,   // token 0
                                      0.0, 1.0,  2.0, 0.0,    0.0, 2.0,   0.0, -1.0,   3.0, -1.0,  2.0, 0.0,   // token 1
                                      1.0, 1.0,  1.0, -1.0,   -1.0, 1.0,  2.0, 2.0,    5.0, 5.0,   -4.0, 4.0},  // token 2
                                     {1, 3, 12}, Dtype::Float64);
    example.inputs = {{"qkv", qkv}, {"key_padding_mask", float64_matrix({{1.0, 1.0, 0.0}}), false}};
    example.upstream = Tensor::from_vector({1.0, 0.0, 0.5, -1.0,  // W_0 (the attention example's) | W_1
                                            0.0, 1.0, -1.0, 0.0,
                                            1.0, -1.0, 0.0, 2.0},
                                           {1, 3, 4}, Dtype::Float64);
    example.forward = [](const std::vector<Var>& x) {
        return packed_attention(x[0], x[1].value(), /*heads=*/2, /*dropout=*/0.0, /*generator=*/nullptr);
    };
    example.steps = [](const std::vector<Tensor>& x, const Tensor& W) -> std::vector<ExampleStep> {
        const int64_t tokens = 3, heads = 2, head_dim = 2, model_dim = heads * head_dim;
        Tensor packed = x[0].reshape({tokens, 3 * model_dim});  // [T, 3D]
        Tensor dout = W.reshape({tokens, model_dim});            // [T, D]
        std::vector<ExampleStep> steps;
        std::vector<Tensor> outputs, dQ, dK, dV;
        for (int64_t h = 0; h < heads; ++h) {
            // Head h: columns h·dh of q, of k (offset D) and of v (offset 2D).
            Tensor Q = columns(packed, h * head_dim, head_dim), K = columns(packed, model_dim + h * head_dim, head_dim),
                   V = columns(packed, 2 * model_dim + h * head_dim, head_dim);
            HeadSteps s = attention_head(Q, K, V, x[1], columns(dout, h * head_dim, head_dim));
            steps.push_back({fmt::format("S_{}", h), fmt::format("Q_{} K_{}^T / sqrt(dh)   (-inf at a masked key)", h, h),
                             s.S});
            steps.push_back({fmt::format("P_{}", h), fmt::format("softmax of each row of S_{}", h), s.P});
            steps.push_back({fmt::format("dS_{}", h),
                             fmt::format("P_{0} ⊙ (dP_{0} - rowsum(dP_{0} ⊙ P_{0})),  dP_{0} = W_{0} V_{0}^T", h), s.dS});
            outputs.push_back(s.O);
            dQ.push_back(s.dQ);
            dK.push_back(s.dK);
            dV.push_back(s.dV);
        }
        steps.push_back({"Y", "[P_0 V_0 | P_1 V_1]", concat(outputs, 1).reshape({1, tokens, model_dim})});
        Tensor dqkv = concat({dQ[0], dQ[1], dK[0], dK[1], dV[0], dV[1]}, 1);  // [T, 3D]
        steps.push_back({"dqkv", "[dS_h K_h / sqrt(dh) | dS_h^T Q_h / sqrt(dh) | P_h^T W_h], h = 0, 1",
                         dqkv.reshape({1, tokens, 3 * model_dim})});
        return steps;
    };
    return example;
}

}  // namespace nce::worked_examples
