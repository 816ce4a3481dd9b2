#include "losses/multi_positive_in.h"

#include <cmath>
#include <limits>
#include <map>

#include "losses/loss_common.h"
#include "losses/query_groups.h"
#include "losses/random_inputs.h"
#include "losses/random_query_groups.h"
#include "losses/soft_target_cross_entropy.h"
#include "losses/worked_example.h"

namespace nce::losses {
namespace {

constexpr const char* kMultiPositiveIn = "multi_positive_in";


}  // namespace

// l = q p^T / tau                        q, p: [N, d]    l: [N, N]
// log P = log_softmax rows of l          [N, N]
// m_i = lse_{j in G(i)} log P_ij = log sum_{j in G(i)} P_ij      (the group's softmax mass, as a log)
// L = (1/N) sum_i ( log|G(i)| - m_i )
//
// Write m_i = lse_{j in G(i)} l_ij - lse_k l_ik. Each lse has the softmax of its own
// entries as its gradient, so with
//   Q_ik = exp(l_ik) / sum_{j in G(i)} exp(l_ij) for k in G(i), 0 elsewhere   (softmax within the group)
// dm_i/dl_ik = Q_ik - P_ik, and
// dL/dl = (P - Q) / N                    [N, N]: soft_target_cross_entropy_gradient with T = Q
//                                        (rows of Q sum to 1; Q is a constant of the backward)
// dL/dq = dL/dl · p / tau                [N, N]·[N, d]
// dL/dp = (dL/dl)^T · q / tau            [N, N]^T·[N, d]
// dL/dtau = -(1/tau) sum_ij dL/dl_ij · l_ij = -(1/tau) sum(q ⊙ dL/dq)
// dL/dlog_tau = tau · dL/dtau = -sum(q ⊙ dL/dq)    (0 while tau sits at its floor 1e-4)
// Every step is a tensor op on the inputs' device: the group mask M [N, N] (1 where qid_j =
// qid_i) is made there (query_groups.h), and |G(i)| = sum_j M_ij.
Var multi_positive_in(const Var& q, const Var& p, const Tensor& qid, const Var& log_tau, double tau) {
    check_matrix(q, kMultiPositiveIn, "q");
    check_matrix(p, kMultiPositiveIn, "p");
    check_same_shape(q, p, kMultiPositiveIn, "q", "p");
    NCE_CHECK(q.dtype() == p.dtype(), "{}: q is {} but p is {}; give both the same dtype", kMultiPositiveIn,
              dtype_name(q.dtype()), dtype_name(p.dtype()));
    int64_t rows = q.size(0);
    check_min_rows(rows, 2, kMultiPositiveIn, "N (rows of q; the other rows are the negatives)");
    std::vector<int64_t> ids = read_ids(Var(qid), rows, kMultiPositiveIn, "qid");
    // tau is checked even when log_tau makes it unused (spec, Conventions).
    NCE_CHECK(tau > 0 && std::isfinite(tau), "{}: parameter tau must be a finite number > 0, got {}", kMultiPositiveIn, tau);
    Temperature temperature = resolve_temperature(log_tau, tau, kMultiPositiveIn);

    Tensor logits = matmul(q.value(), p.value(), Transpose::Second) * (1.0 / temperature.tau);  // l [N, N]
    Tensor log_probabilities = log_softmax(logits);                                             // log P [N, N]
    // Within the group only: entries outside G(i) become -inf. The diagonal is in G(i), so
    // every row keeps a finite entry; shifting by the row's largest entry, no exponent is positive.
    Tensor same_query = query_groups(ids, q.value().device()).same_query;  // M [N, N], float64
    Tensor group_mask = same_query.to(q.dtype());                            // [N, N]
    Tensor group_log_probabilities =
        keep_where(log_probabilities, group_mask, -std::numeric_limits<double>::infinity());  // [N, N]
    Tensor largest = max(group_log_probabilities, 1, /*keepdim=*/true).values;                  // [N, 1]
    Tensor group_log_mass =
        largest + log(sum(exp(group_log_probabilities - largest), 1, /*keepdim=*/true));  // m [N, 1]
    // Q = P_ij / sum_G P [N, N]: exactly 0 outside G(i), where the entry is -inf (exp(-inf) = 0).
    Tensor group_softmax = exp(group_log_probabilities - group_log_mass);
    Tensor log_group_sizes = log(sum(same_query, 1)).to(q.dtype());                      // log |G(i)| [N]
    Tensor loss = mean(log_group_sizes - group_log_mass.reshape({rows}));                // []

    return Var::from_op(kMultiPositiveIn, std::move(loss), {q, p, log_tau},
        [qv = q.value(), pv = p.value(), probabilities = exp(log_probabilities), group_softmax,
         temperature, log_tau_like = log_tau.detach()](const Tensor& dloss) -> Grads {
            // (P - Q) / N: rowsum(Q) = 1, so the shared soft-target gradient is exactly this.
            Tensor dlogits = soft_target_cross_entropy_gradient(probabilities, group_softmax) * dloss;  // [N, N]
            LogitGradients gradients = backward_through_logits(dlogits, qv, pv, temperature, log_tau_like);
            return {gradients.dq, gradients.dp, gradients.dlog_tau};
        });
}

LossDefinition multi_positive_in_definition() {
    LossDefinition loss;
    loss.name = kMultiPositiveIn;
    loss.inputs = {{"q", InputKind::Embedding},
                   {"p", InputKind::Embedding},
                   {"qid", InputKind::Data},
                   {"log_tau", InputKind::Scalar, /*required=*/false}};
    loss.params = {{"tau", "0.1", ParamRule::Positive, {}}};
    loss.compute = [](const LossArguments& arguments) {
        return multi_positive_in(arguments.input("q"), arguments.input("p"), arguments.input("qid").value(),
                                 arguments.optional("log_tau"), arguments.number("tau"));
    };
    // Random unit rows, groups of 1 to 3 rows scattered over the batch (at least one real
    // group), a learnable tau of 0.1.
    loss.example = [](Generator& generator, int64_t rows, int64_t dim) {
        return std::map<std::string, Tensor>{{"q", random_unit_rows(generator, rows, dim)},
                                             {"p", random_unit_rows(generator, rows, dim)},
                                             {"qid", query_ids_with_a_real_group(generator, rows)},
                                             {"log_tau", Tensor::full({1}, std::log(0.1), Dtype::Float64)}};
    };
    // The page's example: N = 3 unit pairs, rows 0 and 1 one query (qid 0), row 2 another
    // (qid 1); a learnable tau of 0.5.
    loss.worked_example = [] {
        WorkedExample example;
        example.inputs = grouped_example_inputs();
        example.steps = [](const LossArguments& arguments) {
            Tensor q = arguments.input("q").value(), p = arguments.input("p").value();
            double tau = std::exp(arguments.input("log_tau").value().item());
            int64_t N = q.size(0);
            Tensor same_query = same_query_mask(arguments.input("qid").value());  // M [N, N]
            Tensor l = matmul(q, p, Transpose::Second) / tau;                                  // [N, N]
            Tensor P = softmax(l);                                                             // [N, N]
            Tensor group_mass_log = log(sum(same_query * P, 1));                              // m [N]
            Tensor row_loss = log(sum(same_query, 1)) - group_mass_log;                        // [N]
            Tensor group_exp = same_query * exp(l);                                            // [N, N]
            Tensor Q = group_exp / sum(group_exp, 1, /*keepdim=*/true);                        // [N, N]
            Tensor G = (P - Q) / static_cast<double>(N);                                       // [N, N]
            std::vector<DerivationStep> steps{
                {"tau", "exp(log_tau)", Tensor::scalar(tau, Dtype::Float64)},
                {"M", "1 where qid_j = qid_i (j in G(i)), else 0", same_query},
                {"l", "q p^T / tau", l},
                {"P", "softmax of each row of l", P},
                {"m", "log sum_{j in G(i)} P_ij, the log of the group's mass", group_mass_log},
                {"L_i", "log |G(i)| - m_i, each row's term (L is their mean)", row_loss},
                {"Q", "softmax of each row of l within its group, 0 outside", Q},
                {"G", "(P - Q) / N", G}};
            append_logit_gradient_steps(steps, q, p, G, l, tau);  // dq, dp, dlog_tau both ways
            return steps;
        };
        return example;
    };
    return loss;
}

}  // namespace nce::losses
