#include "losses/relaxed_hard_negative.h"

#include <cmath>
#include <map>

#include "losses/loss_common.h"
#include "losses/query_groups.h"
#include "losses/random_inputs.h"
#include "losses/random_query_groups.h"
#include "losses/soft_target_cross_entropy.h"
#include "losses/worked_example.h"

namespace nce::losses {
namespace {

constexpr const char* kRelaxedHardNegative = "relaxed_hard_negative";

struct RelaxedTargets {
    Tensor targets;        // t [N, N], float64; every row sums to 1
    Tensor entropy_term;   // (1/N) sum_ij t_ij log t_ij, over t_ij > 0 only (0·log 0 = 0); [], float64
};

// t_ii = 1 - p_relax, t_ij = p_relax / (|G(i)| - 1) for the other j in G(i); one-hot when |G(i)| = 1.
// From the same-query mask M and I (float64, on their device), with o_i = |G(i)| - 1 = sum_j M_ij - 1,
// row i's diagonal value b_i and its value a_i at the other j in G(i):
//   b = 1 - step(o) p_relax     a = p_relax / max(o, 1)     (a row alone has M - I = 0)     [N, 1]
//   t = (M - I) ⊙ a + I ⊙ b                                                                [N, N]
// Row i's entropy term needs only those two values: sum_j t_ij log t_ij = b_i log b_i + o_i a_i log a_i.
RelaxedTargets relaxed_targets(const Tensor& same_query, const Tensor& identity, double p_relax) {
    Tensor others = sum(same_query, 1, /*keepdim=*/true) - 1.0;                                  // o [N, 1]
    Tensor diagonal = 1.0 - step(others) * p_relax;                                              // b [N, 1]
    Tensor off_diagonal = full_like(others, p_relax) / maximum(others, full_like(others, 1.0));  // a [N, 1]
    Tensor targets = (same_query - identity) * off_diagonal + identity * diagonal;                // t [N, N]
    auto x_log_x = [](const Tensor& x) { return x * keep_where(log(x), x, 0.0); };                // 0 where x = 0
    Tensor row_entropy = x_log_x(diagonal) + others * x_log_x(off_diagonal);                     // [N, 1]
    return {targets, sum(row_entropy) / static_cast<double>(same_query.size(0))};
}


}  // namespace

// l = q p^T / tau                        q, p: [N, d]    l: [N, N]
// t: the relaxed targets                 [N, N]   (built from qid and p_relax: data, no gradient)
// L = (1/N) sum_ij t_ij log t_ij  -  (1/N) sum_ij t_ij log P_ij      P = softmax rows of l
//     the first term is a constant (the targets' negative entropy); the second is the
//     soft-target cross-entropy of soft_target_cross_entropy.h
//
// dL/dl = (P - t) / N                    rows of t sum to 1
// dL/dq = dL/dl · p / tau                [N, N]·[N, d]
// dL/dp = (dL/dl)^T · q / tau            [N, N]^T·[N, d]
// Every step is a tensor op on the inputs' device: t and its entropy term are made there from
// the same-query mask (query_groups.h), in float64, then t is taken to the inputs' dtype.
Var relaxed_hard_negative(const Var& q, const Var& p, const Tensor& qid, double tau, double p_relax) {
    check_matrix(q, kRelaxedHardNegative, "q");
    check_matrix(p, kRelaxedHardNegative, "p");
    check_same_shape(q, p, kRelaxedHardNegative, "q", "p");
    NCE_CHECK(q.dtype() == p.dtype(), "{}: q is {} but p is {}; give both the same dtype", kRelaxedHardNegative,
              dtype_name(q.dtype()), dtype_name(p.dtype()));
    int64_t rows = q.size(0);
    check_min_rows(rows, 2, kRelaxedHardNegative, "N (rows of q; the other rows are the negatives)");
    std::vector<int64_t> ids = read_ids(Var(qid), rows, kRelaxedHardNegative, "qid");
    NCE_CHECK(tau > 0 && std::isfinite(tau), "{}: parameter tau must be a finite number > 0, got {}", kRelaxedHardNegative, tau);
    NCE_CHECK(p_relax >= 0 && p_relax < 1, "{}: parameter p_relax must satisfy 0 <= p_relax < 1, got {}", kRelaxedHardNegative,
              p_relax);

    Tensor logits = matmul(q.value(), p.value(), Transpose::Second) * (1.0 / tau);  // l [N, N]
    RelaxedTargets relaxed = relaxed_targets(query_groups(ids, q.value().device()).same_query,
                                             identity_on(rows, q.value().device()), p_relax);
    Tensor targets = relaxed.targets.to(q.dtype());                                  // t [N, N]
    SoftTargetCrossEntropy forward = soft_target_cross_entropy(logits, targets);
    Tensor loss = forward.loss + relaxed.entropy_term.to(q.dtype());                 // []

    Temperature temperature{tau};  // fixed
    return Var::from_op(kRelaxedHardNegative, std::move(loss), {q, p},
        [qv = q.value(), pv = p.value(), probabilities = forward.probabilities, targets,
         temperature](const Tensor& dloss) -> Grads {
            Tensor dlogits = soft_target_cross_entropy_gradient(probabilities, targets) * dloss;  // (P - t)/N
            LogitGradients gradients = backward_through_logits(dlogits, qv, pv, temperature, Var());
            return {gradients.dq, gradients.dp};
        });
}

LossDefinition relaxed_hard_negative_definition() {
    LossDefinition loss;
    loss.name = kRelaxedHardNegative;
    loss.inputs = {{"q", InputKind::Embedding}, {"p", InputKind::Embedding}, {"qid", InputKind::Data}};
    loss.params = {{"tau", "0.1", ParamRule::Positive, {}}, {"p_relax", "0.1", ParamRule::UnitInterval, {}}};
    loss.compute = [](const LossArguments& arguments) {
        return relaxed_hard_negative(arguments.input("q"), arguments.input("p"), arguments.input("qid").value(),
                                     arguments.number("tau"), arguments.number("p_relax"));
    };
    // Random unit rows; real groups of 1 to 3 rows, so both the one-hot rows (|G| = 1) and
    // the relaxed ones appear.
    loss.example = [](Generator& generator, int64_t rows, int64_t dim) {
        return std::map<std::string, Tensor>{{"q", random_unit_rows(generator, rows, dim)},
                                             {"p", random_unit_rows(generator, rows, dim)},
                                             {"qid", query_ids_with_a_real_group(generator, rows)}};
    };
    // The page's example: N = 4 unit pairs, rows 0, 1, 2 one query (qid 0, so p_relax is spread
    // over two other rows), row 3 another (qid 1, a group of one: one-hot); tau = 0.5, p_relax = 0.2.
    loss.worked_example = [] {
        WorkedExample example;
        example.inputs = {{"q", matrix({{1.0, 0.0}, {0.8, 0.6}, {0.6, 0.8}, {0.0, 1.0}})},
                          {"p", matrix({{0.8, 0.6}, {0.6, 0.8}, {1.0, 0.0}, {0.0, 1.0}})},
                          {"qid", Tensor::from_indices({0, 0, 0, 1}, {4})}};
        example.params = {{"tau", "0.5"}, {"p_relax", "0.2"}};
        example.steps = [](const LossArguments& arguments) {
            Tensor q = arguments.input("q").value(), p = arguments.input("p").value();
            double tau = arguments.number("tau"), p_relax = arguments.number("p_relax");
            int64_t N = q.size(0);
            Tensor I = identity(N);                                                              // [N, N]
            Tensor same_query = same_query_mask(arguments.input("qid").value());     // M [N, N]
            Tensor others = sum(same_query, 1, /*keepdim=*/true) - 1.0;                          // |G(i)| - 1  [N, 1]
            // Row i: 1 - p_relax on the diagonal when it has others (1 when alone), and p_relax
            // split evenly over the others; a row alone has M - I = 0 there, so divide it by 1.
            Tensor t = I * (1.0 - step(others) * p_relax) +
                       (same_query - I) * p_relax / maximum(others, full_like(others, 1.0));    // [N, N]
            Tensor l = matmul(q, p, Transpose::Second) / tau;                                    // [N, N]
            Tensor P = softmax(l);                                                               // [N, N]
            Tensor log_t = keep_where(log(t), t, 0.0);                                           // 0 where t = 0
            Tensor row_kl = sum(t * (log_t - log_softmax(l)), 1);                                // [N]
            Tensor G = (P - t) / static_cast<double>(N);                                         // [N, N]
            return std::vector<DerivationStep>{
                {"M", "1 where qid_j = qid_i (j in G(i)), else 0", same_query},
                {"t", "1 - p_relax at j = i, p_relax / (|G(i)| - 1) at the other j in G(i); one-hot when |G(i)| = 1",
                 t},
                {"l", "q p^T / tau", l},
                {"P", "softmax of each row of l", P},
                {"KL_i", "sum_j t_ij (log t_ij - log P_ij), 0 log 0 = 0 (L is their mean)", row_kl},
                {"G", "(P - t) / N", G},
                {"dq", "G p / tau", matmul(G, p) / tau},
                {"dp", "G^T q / tau", matmul(G, q, Transpose::First) / tau}};
        };
        return example;
    };
    return loss;
}

}  // namespace nce::losses
