#include "losses/multi_positive.h"

#include <cmath>
#include <map>

#include "losses/query_groups.h"
#include "losses/random_inputs.h"
#include "losses/random_query_groups.h"
#include "losses/loss_common.h"
#include "losses/soft_target_cross_entropy.h"
#include "losses/worked_example.h"

namespace nce::losses {
namespace {

constexpr const char* kMultiPositive = "multi_positive";

// T_ij = M_ij / |G(i)|, |G(i)| = sum_j M_ij     [N, N], float64 on M's device; every row sums to 1.
Tensor group_average_targets(const Tensor& same_query) {
    return same_query / sum(same_query, 1, /*keepdim=*/true);
}

}  // namespace

// l = q p^T / tau                     q, p: [N, d]    l: [N, N]
// T_ij = 1/|G(i)| for j in G(i)       [N, N]   (data: no gradient; made on the inputs' device)
// L = -(1/N) sum_ij T_ij log P_ij     P = softmax rows of l
//
// dL/dl = (P - T) / N                 rows of T sum to 1 (soft_target_cross_entropy.h)
// dL/dq = dL/dl · p / tau             [N, N]·[N, d]
// dL/dp = (dL/dl)^T · q / tau         [N, N]^T·[N, d]
// dL/dtau = -(1/tau) sum_ij dL/dl_ij · l_ij = -(1/tau) sum(q ⊙ dL/dq)
//           because sum_j dL/dl_ij l_ij = q_i · (dL/dl · p)_i / tau = q_i · dL/dq_i
// dL/dlog_tau = tau · dL/dtau = -sum(q ⊙ dL/dq)    (0 while tau sits at its floor 1e-4)
// Every step is a tensor op on the inputs' device; the upstream dy multiplies dL/dl as a tensor.
Var multi_positive(const Var& q, const Var& p, const Tensor& qid, const Var& log_tau, double tau) {
    check_matrix(q, kMultiPositive, "q");
    check_matrix(p, kMultiPositive, "p");
    check_same_shape(q, p, kMultiPositive, "q", "p");
    NCE_CHECK(q.dtype() == p.dtype(), "{}: q is {} but p is {}; give both the same dtype", kMultiPositive,
              dtype_name(q.dtype()), dtype_name(p.dtype()));
    int64_t rows = q.size(0);
    check_min_rows(rows, 2, kMultiPositive, "N (rows of q; the other rows are the negatives)");
    std::vector<int64_t> ids = read_ids(Var(qid), rows, kMultiPositive, "qid");
    // tau is checked even when log_tau makes it unused (spec, Conventions).
    NCE_CHECK(tau > 0 && std::isfinite(tau), "{}: parameter tau must be a finite number > 0, got {}", kMultiPositive, tau);
    Temperature temperature = resolve_temperature(log_tau, tau, kMultiPositive);

    Tensor logits = matmul(q.value(), p.value(), Transpose::Second) * (1.0 / temperature.tau);  // [N, N]
    QueryGroups groups = query_groups(ids, q.value().device());
    Tensor targets = group_average_targets(groups.same_query).to(q.dtype());                    // [N, N]
    SoftTargetCrossEntropy forward = soft_target_cross_entropy(logits, targets);

    return Var::from_op(kMultiPositive, forward.loss, {q, p, log_tau},
        [qv = q.value(), pv = p.value(), probabilities = forward.probabilities, targets, temperature,
         log_tau_like = log_tau.detach()](const Tensor& dloss) -> Grads {
            Tensor dlogits = soft_target_cross_entropy_gradient(probabilities, targets) * dloss;  // [N, N]
            LogitGradients gradients = backward_through_logits(dlogits, qv, pv, temperature, log_tau_like);
            return {gradients.dq, gradients.dp, gradients.dlog_tau};
        });
}

LossDefinition multi_positive_definition() {
    LossDefinition loss;
    loss.name = kMultiPositive;
    loss.inputs = {{"q", InputKind::Embedding},
                   {"p", InputKind::Embedding},
                   {"qid", InputKind::Data},
                   {"log_tau", InputKind::Scalar, /*required=*/false}};
    loss.params = {{"tau", "0.1", ParamRule::Positive, {}}};
    loss.compute = [](const LossArguments& arguments) {
        return multi_positive(arguments.input("q"), arguments.input("p"), arguments.input("qid").value(),
                              arguments.optional("log_tau"), arguments.number("tau"));
    };
    loss.example = [](Generator& generator, int64_t rows, int64_t dim) {
        return std::map<std::string, Tensor>{{"q", random_unit_rows(generator, rows, dim)},
                                             {"p", random_unit_rows(generator, rows, dim)},
                                             {"qid", random_query_ids(generator, rows)},
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
            Tensor T = same_query / sum(same_query, 1, /*keepdim=*/true);                      // [N, N]
            Tensor l = matmul(q, p, Transpose::Second) / tau;                                  // [N, N]
            Tensor P = softmax(l);                                                             // [N, N]
            Tensor G = (P - T) / static_cast<double>(N);                                       // [N, N]
            std::vector<DerivationStep> steps{
                {"tau", "exp(log_tau)", Tensor::scalar(tau, Dtype::Float64)},
                {"M", "1 where qid_j = qid_i (j in G(i)), else 0", same_query},
                {"T", "M_ij / |G(i)|, |G(i)| = sum_j M_ij", T},
                {"l", "q p^T / tau", l},
                {"P", "softmax of each row of l", P},
                {"G", "(P - T) / N", G}};
            append_logit_gradient_steps(steps, q, p, G, l, tau);  // dq, dp, dlog_tau both ways
            return steps;
        };
        return example;
    };
    return loss;
}

}  // namespace nce::losses
