#include "losses/listwise.h"

#include <cmath>

#include "losses/loss_common.h"
#include "losses/random_inputs.h"
#include "losses/worked_example.h"

namespace nce::losses {
namespace {

void check_listwise_inputs(const Var& q, const Var& a, const Tensor& score, double tau) {
    check_matrix(q, "listwise", "q");
    check_min_rows(q.size(0), 1, "listwise", "Q (rows of q)");
    NCE_CHECK(a.defined(), "listwise: input a is missing");
    NCE_CHECK(a.dtype() == q.dtype(), "listwise: a ({}) must have q's dtype ({})", dtype_name(a.dtype()),
              dtype_name(q.dtype()));
    int64_t Q = q.size(0), d = q.size(1);
    NCE_CHECK(a.value().rank() == 3 && a.size(0) == Q && a.size(2) == d,
              "listwise: a must have shape [Q, K, d] = [{}, K, {}] to match q {}, got {}", Q, d,
              shape_string(q.shape()), shape_string(a.shape()));
    check_min_rows(a.size(1), 2, "listwise", "K (candidates per query, axis 1 of a)");
    check_finite(a.value(), "listwise", "a");
    NCE_CHECK(score.defined(), "listwise: input score is missing");
    NCE_CHECK(score.shape() == Shape({Q, a.size(1)}), "listwise: score must have shape [Q, K] = [{}, {}], got {}", Q,
              a.size(1), shape_string(score.shape()));
    check_finite(score, "listwise", "score");
    NCE_CHECK(tau > 0 && std::isfinite(tau), "listwise: parameter tau must be > 0, got {}", tau);
}

// The target distribution t = softmax_k(sh / tau), as log t.   score: [Q, K] -> [Q, K]
//   sh_qk = score_qk / max_k score_qk when that max is > 0, else score_qk unchanged.
Tensor log_target(const Tensor& score, double tau) {
    Tensor row_max = max(score, 1, true).values;                  // [Q, 1]
    Tensor divisor = keep_where(row_max, step(row_max), 1.0);    // the max where it is > 0, else 1
    return log_softmax(score / divisor / tau);                    // stable: shifted by the row max
}

}  // namespace

// Listwise.    q: [Q, d]    a: [Q, K, d]    score, t, pr, logits: [Q, K]
//   logits_qk = q_q·a_qk / tau
//   log pr_qk = logits_qk - lse_j logits_qj            (log_softmax over k)
//   L = (1/Q) sum_qk t_qk ( log t_qk - log pr_qk )      t is data: only pr depends on q, a
//
// d(-log pr_qk)/dlogits_qj = pr_qj - [j = k], and sum_k t_qk = 1, so
//   dL/dlogits_qj = (1/Q) sum_k t_qk (pr_qj - [j = k]) = (pr_qj - t_qj) / Q
//   dL/dlogits = (pr - t) / Q                             [Q, K]
// Then through logits_qk = q_q·a_qk / tau:
//   dL/dq_q  = sum_k dL/dlogits_qk a_qk / tau             [Q, 1, K]·[Q, K, d] -> [Q, d]
//   dL/da_qk = dL/dlogits_qk q_q / tau                    [Q, K, 1] * [Q, 1, d] -> [Q, K, d]
Var listwise(const Var& q, const Var& a, const Tensor& score, double tau) {
    check_listwise_inputs(q, a, score, tau);
    const Tensor &qv = q.value(), &av = a.value();
    int64_t Q = av.size(0), K = av.size(1), d = av.size(2);
    Tensor logits = matmul(av, qv.reshape({Q, d, 1})).reshape({Q, K}) / tau;   // [Q, K, d]·[Q, d, 1]
    Tensor log_pr = log_softmax(logits);                                       // [Q, K]
    Tensor log_t = log_target(score.to(qv.dtype()).to(qv.device()), tau);     // [Q, K]
    Tensor t = exp(log_t);
    Tensor loss = sum(t * (log_t - log_pr)) / static_cast<double>(Q);          // []
    return Var::from_op("listwise", std::move(loss), {q, a},
        [qv, av, pr = exp(log_pr), t, tau](const Tensor& dy) -> Grads {
            int64_t Q = av.size(0), K = av.size(1), d = av.size(2);
            Tensor dlogits = (pr - t) * (dy.item() / static_cast<double>(Q));               // [Q, K]
            Tensor dq = matmul(dlogits.reshape({Q, 1, K}), av).reshape({Q, d}) / tau;     // [Q, d]
            Tensor da = dlogits.reshape({Q, K, 1}) * qv.reshape({Q, 1, d}) / tau;          // [Q, K, d]
            return {dq, da};
        });
}

LossDefinition listwise_definition() {
    LossDefinition loss;
    loss.name = "listwise";
    loss.inputs = {{"q", InputKind::Embedding}, {"a", InputKind::Embedding}, {"score", InputKind::Data}};
    loss.params = {{"tau", "1.0", ParamRule::Positive, {}}};
    loss.compute = [](const LossArguments& arguments) {
        return listwise(arguments.input("q"), arguments.input("a"), arguments.input("score").value(),
                        arguments.number("tau"));
    };
    // Q = rows queries with K = 4 candidates each: unit rows for q and every a_qk, and
    // graded scores uniform in [0, 3). (The loss is smooth: no kinks to avoid.)
    loss.example = [](Generator& generator, int64_t rows, int64_t dim) {
        const int64_t K = 4;
        Tensor q = random_unit_rows(generator, rows, dim);
        Tensor a = random_unit_rows(generator, rows * K, dim).reshape({rows, K, dim});
        Tensor score = generator.uniform({rows, K}, Dtype::Float64, 0.0, 3.0);
        return std::map<std::string, Tensor>{{"q", q}, {"a", a}, {"score", score}};
    };
    // The page's example: Q = 2 queries with K = 2 candidates each, d = 2, the default tau 1.
    // Query 0's scores have a positive max (divided by it); query 1's max is 0 (used as they are).
    loss.worked_example = [] {
        WorkedExample example;
        example.inputs = {{"q", matrix({{1.0, 0.0}, {0.6, 0.8}})},
                          {"a", Tensor::from_vector({0.6, 0.8, 0.0, 1.0,      // a_00, a_01
                                                     1.0, 0.0, 0.8, 0.6},     // a_10, a_11
                                                    {2, 2, 2}, Dtype::Float64)},
                          {"score", matrix({{2.0, 1.0}, {-1.0, 0.0}})}};
        example.steps = [](const LossArguments& arguments) {
            Tensor q = arguments.input("q").value(), a = arguments.input("a").value();
            Tensor score = arguments.input("score").value();
            double tau = arguments.number("tau");
            int64_t Q = a.size(0), K = a.size(1), d = a.size(2);
            Tensor logits = sum(q.reshape({Q, 1, d}) * a, 2) / tau;             // [Q, K]
            Tensor pr = softmax(logits);                                         // [Q, K]
            Tensor row_max = max(score, 1, true).values;                         // [Q, 1]
            Tensor divisor = keep_where(row_max, step(row_max), 1.0);            // [Q, 1]
            Tensor sh = score / divisor;                                         // [Q, K]
            Tensor t = softmax(sh / tau);                                        // [Q, K]
            Tensor G = (pr - t) / static_cast<double>(Q);                        // [Q, K]
            Tensor cross_entropy = -sum(t * log(pr)) / static_cast<double>(Q);   // []
            Tensor entropy = -sum(t * log(t)) / static_cast<double>(Q);          // []
            return std::vector<DerivationStep>{
                {"logits", "q_q.a_qk / tau", logits},
                {"pr", "softmax_k(logits_q)", pr},
                {"sh", "score / max_k score where that max > 0, else score", sh},
                {"t", "softmax_k(sh_q / tau)", t},
                {"H(t, pr)", "-(1/Q) sum_qk t_qk log pr_qk, the cross-entropy", cross_entropy},
                {"H(t)", "-(1/Q) sum_qk t_qk log t_qk, a constant", entropy},
                {"H(t, pr) - H(t)", "L, the KL divergence", cross_entropy - entropy},
                {"G", "dL/dlogits = (pr - t) / Q", G},
                {"dq", "sum_k G_qk a_qk / tau", sum(G.reshape({Q, K, 1}) * a, 1) / tau},
                {"da", "G_qk q_q / tau", G.reshape({Q, K, 1}) * q.reshape({Q, 1, d}) / tau}};
        };
        return example;
    };
    return loss;
}

}  // namespace nce::losses
