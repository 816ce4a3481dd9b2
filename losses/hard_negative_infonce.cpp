#include "losses/hard_negative_infonce.h"

#include <cmath>
#include <limits>

#include "losses/query_groups.h"
#include "losses/random_inputs.h"
#include "losses/random_query_groups.h"
#include "losses/loss_common.h"
#include "losses/soft_target_cross_entropy.h"
#include "losses/worked_example.h"

namespace nce::losses {
namespace {

constexpr const char* kHardNegativeInfonce = "hard_negative_infonce";

// log of the dtype's largest finite value: exp(x) overflows for x above it.
double log_largest_finite(Dtype dtype) {
    return dtype == Dtype::Float32 ? std::log(static_cast<double>(std::numeric_limits<float>::max()))
                                   : std::log(std::numeric_limits<double>::max());
}

}  // namespace

// l = q p^T / tau                             q, p: [N, d]    l: [N, N]
// M: the K same-group pairs (i != j)          [N, N]   (data)
// L = -(1/N) sum_i log P_ii  +  (weight/K) sum_ij M_ij exp(l_ij)      P = softmax rows of l
//     (the second term is 0 when K = 0)
//
// dL/dl = (P - I) / N + H,    H = (weight/K) · M ⊙ exp(l)       [N, N]
//         (the InfoNCE part is soft_target_cross_entropy with T = I; d exp(l_ij)/dl_ij = exp(l_ij))
// dL/dq = dL/dl · p / tau             [N, N]·[N, d]
// dL/dp = (dL/dl)^T · q / tau         [N, N]^T·[N, d]
// dL/dtau = -(1/tau) sum_ij dL/dl_ij · l_ij = -(1/tau) sum(q ⊙ dL/dq)
//           because sum_j dL/dl_ij l_ij = q_i · (dL/dl · p)_i / tau = q_i · dL/dq_i
// dL/dlog_tau = tau · dL/dtau = -sum(q ⊙ dL/dq)    (0 while tau sits at its floor 1e-4)
// Every step is a tensor op on the inputs' device: I and M = (same-query mask) - I are made
// there (query_groups.h); K comes from the group sizes. The overflow check reads one number,
// the largest pair logit (and, only to name it in the error, where it sits), and the penalty.
Var hard_negative_infonce(const Var& q, const Var& p, const Tensor& qid, const Var& log_tau, double tau,
                          double weight) {
    check_matrix(q, kHardNegativeInfonce, "q");
    check_matrix(p, kHardNegativeInfonce, "p");
    check_same_shape(q, p, kHardNegativeInfonce, "q", "p");
    NCE_CHECK(q.dtype() == p.dtype(), "{}: q is {} but p is {}; give both the same dtype", kHardNegativeInfonce,
              dtype_name(q.dtype()), dtype_name(p.dtype()));
    int64_t rows = q.size(0);
    check_min_rows(rows, 2, kHardNegativeInfonce, "N (rows of q; the other rows are the negatives)");
    std::vector<int64_t> ids = read_ids(Var(qid), rows, kHardNegativeInfonce, "qid");
    NCE_CHECK(weight >= 0 && std::isfinite(weight), "{}: parameter weight must be a finite number >= 0, got {}", kHardNegativeInfonce,
              weight);
    // tau is checked even when log_tau makes it unused (spec, Conventions).
    NCE_CHECK(tau > 0 && std::isfinite(tau), "{}: parameter tau must be a finite number > 0, got {}", kHardNegativeInfonce, tau);
    Temperature temperature = resolve_temperature(log_tau, tau, kHardNegativeInfonce);

    Tensor logits = matmul(q.value(), p.value(), Transpose::Second) * (1.0 / temperature.tau);  // [N, N]
    QueryGroups groups = query_groups(ids, q.value().device());
    Tensor identity = identity_on(rows, q.value().device());                                    // I [N, N], float64
    Tensor targets = identity.to(q.dtype());                                                    // [N, N]
    SoftTargetCrossEntropy forward = soft_target_cross_entropy(logits, targets);
    Tensor loss = forward.loss;

    int64_t pair_count = groups.ordered_pairs;  // K
    Tensor penalty_gradient;                    // H [N, N]; stays undefined when there is no pair
    if (pair_count > 0) {
        const double minus_infinity = -std::numeric_limits<double>::infinity();
        Tensor pairs = (groups.same_query - identity).to(q.dtype());     // M [N, N]
        Tensor pair_logits = keep_where(logits, pairs, minus_infinity);  // l_ij on the pairs, -inf elsewhere
        MaxResult largest = max(pair_logits.reshape({rows * rows}), 0);
        double largest_logit = largest.values.item();
        double limit = log_largest_finite(q.dtype());
        const char* dtype = dtype_name(q.dtype());
        // (The arguments after the condition are read only when it fails.)
        NCE_CHECK(largest_logit <= limit,
                  "{}: the penalty exp(l_ij) overflows {}: same-group pair (i={}, j={}) has l_ij = {} > {} = log({} "
                  "max); raise tau or lower weight",
                  kHardNegativeInfonce, dtype, static_cast<int64_t>(largest.indices.item()) / rows,
                  static_cast<int64_t>(largest.indices.item()) % rows, largest_logit, limit, dtype);
        // H = (weight/K) · M ⊙ exp(l): exp(-inf) = 0 off the pairs. Its sum is the penalty.
        penalty_gradient = exp(pair_logits) * (weight / static_cast<double>(pair_count));
        Tensor penalty = sum(penalty_gradient);  // weight · mean over pairs of exp(l_ij)
        // No H_ij is negative, so their sum is finite exactly when every H_ij is (an inf or a
        // NaN among them carries into the sum): one number to read, not N x N.
        NCE_CHECK(all_finite(penalty),
                  "{}: the penalty weight · mean exp(l_ij) overflows {} (largest pair logit {}); raise tau or lower "
                  "weight",
                  kHardNegativeInfonce, dtype, largest_logit);
        loss = loss + penalty;
    }

    return Var::from_op(kHardNegativeInfonce, loss, {q, p, log_tau},
        [qv = q.value(), pv = p.value(), probabilities = forward.probabilities, targets, penalty_gradient, temperature,
         log_tau_like = log_tau.detach()](const Tensor& dloss) -> Grads {
            Tensor dlogits = soft_target_cross_entropy_gradient(probabilities, targets);  // (P - I) / N  [N, N]
            if (penalty_gradient.defined()) dlogits = dlogits + penalty_gradient;         // + H
            dlogits = dlogits * dloss;
            LogitGradients gradients = backward_through_logits(dlogits, qv, pv, temperature, log_tau_like);
            return {gradients.dq, gradients.dp, gradients.dlog_tau};
        });
}

LossDefinition hard_negative_infonce_definition() {
    LossDefinition loss;
    loss.name = kHardNegativeInfonce;
    loss.inputs = {{"q", InputKind::Embedding},
                   {"p", InputKind::Embedding},
                   {"qid", InputKind::Data},
                   {"log_tau", InputKind::Scalar, /*required=*/false}};
    loss.params = {{"tau", "0.1", ParamRule::Positive, {}}, {"weight", "1.0", ParamRule::NonNegative, {}}};
    loss.compute = [](const LossArguments& arguments) {
        return hard_negative_infonce(arguments.input("q"), arguments.input("p"), arguments.input("qid").value(),
                                     arguments.optional("log_tau"), arguments.number("tau"),
                                     arguments.number("weight"));
    };
    loss.example = [](Generator& generator, int64_t rows, int64_t dim) {
        return std::map<std::string, Tensor>{{"q", random_unit_rows(generator, rows, dim)},
                                             {"p", random_unit_rows(generator, rows, dim)},
                                             {"qid", random_query_ids(generator, rows)},
                                             {"log_tau", Tensor::full({1}, std::log(0.1), Dtype::Float64)}};
    };
    // The page's example: N = 3 unit pairs, rows 0 and 1 one query (qid 0: the pairs (0, 1)
    // and (1, 0)), row 2 another (qid 1); a learnable tau of 0.5 and a penalty weight of 0.1.
    loss.worked_example = [] {
        WorkedExample example;
        example.inputs = grouped_example_inputs();
        example.params = {{"weight", "0.1"}};
        example.steps = [](const LossArguments& arguments) {
            Tensor q = arguments.input("q").value(), p = arguments.input("p").value();
            double tau = std::exp(arguments.input("log_tau").value().item());
            double weight = arguments.number("weight");
            int64_t N = q.size(0);
            Tensor I = identity(N);                                                              // [N, N]
            Tensor pairs = same_query_mask(arguments.input("qid").value()) - I;       // M [N, N]
            double K = sum(pairs).item();                                                        // 2 here, never 0
            Tensor l = matmul(q, p, Transpose::Second) / tau;                                    // [N, N]
            Tensor P = softmax(l);                                                               // [N, N]
            Tensor H = pairs * exp(l) * (weight / K);                                            // [N, N]
            Tensor G = (P - I) / static_cast<double>(N) + H;                                     // [N, N]
            std::vector<DerivationStep> steps{
                {"tau", "exp(log_tau)", Tensor::scalar(tau, Dtype::Float64)},
                {"M", "1 where i != j and qid_i = qid_j (the ordered pairs), else 0", pairs},
                {"K", "sum_ij M_ij, the number of pairs", Tensor::scalar(K, Dtype::Float64)},
                {"l", "q p^T / tau", l},
                {"P", "softmax of each row of l", P},
                {"H", "(weight / K) M_ij exp(l_ij), the penalty's dL/dl", H},
                {"penalty", "sum_ij H_ij, weight times the mean of exp(l_ij) over the pairs", sum(H)},
                {"G", "(P - I) / N + H", G}};
            append_logit_gradient_steps(steps, q, p, G, l, tau);  // dq, dp, dlog_tau both ways
            return steps;
        };
        return example;
    };
    return loss;
}

}  // namespace nce::losses
