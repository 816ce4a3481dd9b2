#include "losses/margin_mse.h"

#include "losses/loss_common.h"
#include "losses/random_inputs.h"
#include "losses/worked_example.h"

namespace nce::losses {
namespace {

constexpr const char* kMarginMse = "margin_mse";

void check_margin_mse_inputs(const Var& q, const Var& p, const Var& n, const Tensor& label) {
    check_matrix(q, kMarginMse, "q");
    check_matrix(p, kMarginMse, "p");
    check_matrix(n, kMarginMse, "n");
    check_same_shape(q, p, kMarginMse, "q", "p");
    check_same_shape(q, n, kMarginMse, "q", "n");
    NCE_CHECK(p.dtype() == q.dtype() && n.dtype() == q.dtype(),
              "{}: q ({}), p ({}) and n ({}) must have the same dtype", kMarginMse, dtype_name(q.dtype()),
              dtype_name(p.dtype()), dtype_name(n.dtype()));
    check_min_rows(q.size(0), 1, kMarginMse, "N (rows of q)");
    check_data_vector(Var(label), q.size(0), kMarginMse, "label");
}

}  // namespace

// Margin MSE.     q, p, n: [N, d]     label: [N]
//   r_i = q_i·p_i - q_i·n_i - label_i = q_i·(p_i - n_i) - label_i       [N]   the residual
//   L   = (1/N) sum_i r_i^2
//
//   dL/dr_i = 2 r_i / N                                                 [N]
//   dr_i/dq_i = p_i - n_i,   dr_i/dp_i = q_i,   dr_i/dn_i = -q_i, so
//   dL/dq_i =  dL/dr_i (p_i - n_i)         [N, 1] * [N, d]
//   dL/dp_i =  dL/dr_i q_i
//   dL/dn_i = -dL/dr_i q_i
Var margin_mse(const Var& q, const Var& p, const Var& n, const Tensor& label) {
    check_margin_mse_inputs(q, p, n, label);
    int64_t N = q.size(0);
    Tensor labels = label.to(q.dtype()).to(q.value().device());  // [N]

    Tensor difference = p.value() - n.value();                           // p - n  [N, d]
    Tensor residual = sum(q.value() * difference, 1) - labels;           // r  [N]
    Tensor loss = mean(square(residual));                                // []
    return Var::from_op(kMarginMse, std::move(loss), {q, p, n},
        [qv = q.value(), difference, slope = (residual * (2.0 / static_cast<double>(N))).reshape({N, 1})](
            const Tensor& dy) -> Grads {
            Tensor dloss_dresidual = slope * dy.item();  // [N, 1]
            Tensor dp = dloss_dresidual * qv;            // [N, d]
            return {dloss_dresidual * difference, dp, -dp};
        });
}

LossDefinition margin_mse_definition() {
    LossDefinition loss;
    loss.name = kMarginMse;
    loss.inputs = {{"q", InputKind::Embedding},
                   {"p", InputKind::Embedding},
                   {"n", InputKind::Embedding},
                   {"label", InputKind::Data}};
    loss.compute = [](const LossArguments& arguments) {
        return margin_mse(arguments.input("q"), arguments.input("p"), arguments.input("n"),
                          arguments.input("label").value());
    };
    // Random unit rows; teacher margins uniform in [-1, 2] (a smooth loss: no kink to avoid).
    loss.example = [](Generator& generator, int64_t rows, int64_t dim) {
        return std::map<std::string, Tensor>{{"q", random_unit_rows(generator, rows, dim)},
                                             {"p", random_unit_rows(generator, rows, dim)},
                                             {"n", random_unit_rows(generator, rows, dim)},
                                             {"label", generator.uniform({rows}, Dtype::Float64, -1.0, 2.0)}};
    };
    // The page's example: row 0 is the tests' one triple by hand (student margin 0.6, teacher
    // 0.1, r_0 = 0.5); row 1 has the student below the teacher (0.36 against 0.5, r_1 = -0.14).
    loss.worked_example = [] {
        WorkedExample example;
        example.inputs = {{"q", matrix({{1.0, 0.0}, {0.6, 0.8}})},
                          {"p", matrix({{0.6, 0.8}, {0.8, 0.6}})},
                          {"n", matrix({{0.0, 1.0}, {1.0, 0.0}})},
                          {"label", Tensor::from_vector({0.1, 0.5}, {2}, Dtype::Float64)}};
        example.steps = [](const LossArguments& arguments) {
            Tensor q = arguments.input("q").value(), p = arguments.input("p").value();
            Tensor n = arguments.input("n").value(), label = arguments.input("label").value();
            int64_t N = q.size(0);
            Tensor student_margin = sum(q * p, 1) - sum(q * n, 1);            // [N]
            Tensor r = student_margin - label;                                 // [N]
            Tensor g = r * (2.0 / static_cast<double>(N));                     // [N]
            Tensor g_rows = g.reshape({N, 1});                                 // [N, 1]
            return std::vector<DerivationStep>{
                {"q.p - q.n", "q_i.p_i - q_i.n_i, the student's margin", student_margin},
                {"r", "(q.p - q.n) - label", r},
                {"g", "dL/dr = 2 r / N", g},
                {"dq", "g_i (p_i - n_i)", g_rows * (p - n)},
                {"dp", "g_i q_i", g_rows * q},
                {"dn", "-g_i q_i", -(g_rows * q)}};
        };
        return example;
    };
    return loss;
}

}  // namespace nce::losses
