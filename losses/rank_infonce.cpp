#include "losses/rank_infonce.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "losses/query_groups.h"
#include "losses/random_inputs.h"
#include "losses/random_query_groups.h"
#include "losses/loss_common.h"
#include "losses/soft_target_cross_entropy.h"
#include "losses/worked_example.h"

namespace nce::losses {
namespace {

constexpr const char* kRankInfonce = "rank_infonce";

// The weight w_j of every row j within its group G(j) (spec, rank_infonce):
//   sh_j = (score_j - min_G score) / (max_G score - min_G score), or 0 when max = min
//   w~_j = exp(a_j),   a_j = -rank_weight·rank_j·use_ranks + score_weight·sh_j·use_scores
//   w_j  = w~_j / sum_{k in G(j)} w~_k
// w is a softmax of a over each group, so it is computed shifted by the group's largest a:
// a large rank_weight·rank then cannot underflow every w~ of a group to 0 (and 0/0).
// Computed on M's device, in float64 (M_jk = 1 where qid_k = qid_j, else 0   [N, N]): a
// group's max and total come from [N, N] matrices whose row j holds the values of j's group,
// with -inf outside it under a max and 0 outside it under a sum (which adds the group's terms
// in row order). rank and score: float64 [N], undefined when their flag is off. Returns w [N].
Tensor rank_weights(const Tensor& same_query, const Tensor& rank, const Tensor& score,
                    const RankInfonceOptions& options) {
    const double minus_infinity = -std::numeric_limits<double>::infinity();
    int64_t rows = same_query.size(0);
    // max over k in G(j) of values_k, for every row j     [N]
    auto group_max = [&](const Tensor& values) {
        return max(keep_where(repeat_rows(values, rows), same_query, minus_infinity), 1).values;
    };
    Tensor exponent = Tensor::zeros({rows}, Dtype::Float64, same_query.device());  // a [N]
    if (options.use_ranks) exponent = exponent - rank * options.rank_weight;
    if (options.use_scores) {
        Tensor highest = group_max(score), lowest = -group_max(-score);  // [N]
        Tensor range = highest - lowest;                                   // [N]
        // A group whose scores are all equal has score_j - lowest = 0: divide it by 1.
        Tensor scaled_score = (score - lowest) / keep_where(range, step(range), 1.0);  // sh [N]
        exponent = exponent + scaled_score * options.score_weight;
    }
    if (!all_finite(exponent)) {
        std::vector<double> values = exponent.to_vector();  // read only to name the row in the error
        size_t j = 0;
        while (std::isfinite(values[j])) ++j;
        fail("{}: the weight exponent of row {} (-rank_weight·rank + score_weight·sh) is {}; lower rank_weight or "
             "the ranks",
             kRankInfonce, j, values[j]);
    }
    Tensor shifted = exp(exponent - group_max(exponent));                          // w~_j / exp(max_G a)  [N]
    Tensor group_total = sum(same_query * shifted.reshape({1, rows}), 1);          // [N]
    return shifted / group_total;                                                  // w [N]
}

}  // namespace

// l = q p^T / tau                     q, p: [N, d]    l: [N, N]
// T_ij = M_ij w_j, w_j for j in G(i)  [N, N]   (data: no gradient flows into rank or score)
// L = -(1/N) sum_ij T_ij log P_ij     P = softmax rows of l
//
// dL/dl = (P - T) / N                 rows of T sum to 1 (soft_target_cross_entropy.h)
// dL/dq = dL/dl · p / tau             [N, N]·[N, d]
// dL/dp = (dL/dl)^T · q / tau         [N, N]^T·[N, d]
// dL/dtau = -(1/tau) sum_ij dL/dl_ij · l_ij = -(1/tau) sum(q ⊙ dL/dq)
//           because sum_j dL/dl_ij l_ij = q_i · (dL/dl · p)_i / tau = q_i · dL/dq_i
// dL/dlog_tau = tau · dL/dtau = -sum(q ⊙ dL/dq)    (0 while tau sits at its floor 1e-4)
// Every step is a tensor op on the inputs' device: M (query_groups.h), w and T are made there,
// in float64, then T is taken to the inputs' dtype. rank and score are read on the host only
// to be checked.
Var rank_infonce(const Var& q, const Var& p, const Tensor& qid, const Tensor& rank, const Tensor& score,
                 const Var& log_tau, const RankInfonceOptions& options) {
    check_matrix(q, kRankInfonce, "q");
    check_matrix(p, kRankInfonce, "p");
    check_same_shape(q, p, kRankInfonce, "q", "p");
    NCE_CHECK(q.dtype() == p.dtype(), "{}: q is {} but p is {}; give both the same dtype", kRankInfonce,
              dtype_name(q.dtype()), dtype_name(p.dtype()));
    int64_t rows = q.size(0);
    check_min_rows(rows, 2, kRankInfonce, "N (rows of q; the other rows are the negatives)");
    std::vector<int64_t> ids = read_ids(Var(qid), rows, kRankInfonce, "qid");
    NCE_CHECK(options.rank_weight >= 0 && std::isfinite(options.rank_weight),
              "{}: parameter rank_weight must be a finite number >= 0, got {}", kRankInfonce, options.rank_weight);
    NCE_CHECK(options.score_weight >= 0 && std::isfinite(options.score_weight),
              "{}: parameter score_weight must be a finite number >= 0, got {}", kRankInfonce, options.score_weight);
    NCE_CHECK(rank.defined() || !options.use_ranks,
              "{}: input rank is missing; it is required when use_ranks=1 (give rank, or set use_ranks=0)", kRankInfonce);
    NCE_CHECK(score.defined() || !options.use_scores,
              "{}: input score is missing; it is required when use_scores=1 (give score, or set use_scores=0)",
              kRankInfonce);
    if (rank.defined()) read_values(Var(rank), rows, kRankInfonce, "rank");     // checks: a vector of N finite values
    if (score.defined()) read_values(Var(score), rows, kRankInfonce, "score");
    // tau is checked even when log_tau makes it unused (spec, Conventions).
    NCE_CHECK(options.tau > 0 && std::isfinite(options.tau), "{}: parameter tau must be a finite number > 0, got {}",
              kRankInfonce, options.tau);
    Temperature temperature = resolve_temperature(log_tau, options.tau, kRankInfonce);

    Tensor logits = matmul(q.value(), p.value(), Transpose::Second) * (1.0 / temperature.tau);  // [N, N]
    Tensor same_query = query_groups(ids, q.value().device()).same_query;                       // M [N, N], float64
    auto as_float64 = [](const Tensor& data) { return data.defined() ? data.to(Dtype::Float64) : Tensor(); };
    Tensor weights = rank_weights(same_query, as_float64(rank), as_float64(score), options);   // w [N]
    Tensor targets = (same_query * weights.reshape({1, rows})).to(q.dtype());                   // T [N, N]
    SoftTargetCrossEntropy forward = soft_target_cross_entropy(logits, targets);

    return Var::from_op(kRankInfonce, forward.loss, {q, p, log_tau},
        [qv = q.value(), pv = p.value(), probabilities = forward.probabilities, targets, temperature,
         log_tau_like = log_tau.detach()](const Tensor& dloss) -> Grads {
            Tensor dlogits = soft_target_cross_entropy_gradient(probabilities, targets) * dloss;  // [N, N]
            LogitGradients gradients = backward_through_logits(dlogits, qv, pv, temperature, log_tau_like);
            return {gradients.dq, gradients.dp, gradients.dlog_tau};
        });
}

LossDefinition rank_infonce_definition() {
    LossDefinition loss;
    loss.name = kRankInfonce;
    loss.inputs = {{"q", InputKind::Embedding},
                   {"p", InputKind::Embedding},
                   {"qid", InputKind::Data},
                   {"rank", InputKind::Data, /*required=*/false},
                   {"score", InputKind::Data, /*required=*/false},
                   {"log_tau", InputKind::Scalar, /*required=*/false}};
    loss.params = {{"tau", "0.1", ParamRule::Positive, {}},
                   {"rank_weight", "0.1", ParamRule::NonNegative, {}},
                   {"score_weight", "0.05", ParamRule::NonNegative, {}},
                   {"use_ranks", "1", ParamRule::Flag, {}},
                   {"use_scores", "0", ParamRule::Flag, {}}};
    loss.compute = [](const LossArguments& arguments) {
        RankInfonceOptions options;
        options.tau = arguments.number("tau");
        options.rank_weight = arguments.number("rank_weight");
        options.score_weight = arguments.number("score_weight");
        options.use_ranks = arguments.number("use_ranks") != 0;
        options.use_scores = arguments.number("use_scores") != 0;
        Var rank = arguments.optional("rank"), score = arguments.optional("score");
        return rank_infonce(arguments.input("q"), arguments.input("p"), arguments.input("qid").value(), rank.value(),
                            score.value(), arguments.optional("log_tau"), options);
    };
    loss.example = [](Generator& generator, int64_t rows, int64_t dim) {
        Tensor qid = random_query_ids(generator, rows);
        return std::map<std::string, Tensor>{{"q", random_unit_rows(generator, rows, dim)},
                                             {"p", random_unit_rows(generator, rows, dim)},
                                             {"qid", qid},
                                             {"rank", random_ranks_in_groups(generator, qid)},
                                             {"score", generator.uniform({rows}, Dtype::Float64)},
                                             {"log_tau", Tensor::full({1}, std::log(0.1), Dtype::Float64)}};
    };
    // The page's example: N = 3 unit pairs, rows 0 and 1 one query (qid 0) with ranks 0 and 1
    // and scores 0.9 and 0.3, row 2 another (qid 1); ranks and scores both used, with weights
    // of 0.5; a learnable tau of 0.5.
    loss.worked_example = [] {
        WorkedExample example;
        example.inputs = grouped_example_inputs();
        example.inputs["rank"] = Tensor::from_indices({0, 1, 0}, {3});
        example.inputs["score"] = Tensor::from_vector({0.9, 0.3, 0.5}, {3}, Dtype::Float64);
        example.params = {{"rank_weight", "0.5"}, {"score_weight", "0.5"}, {"use_scores", "1"}};
        example.steps = [](const LossArguments& arguments) {
            Tensor q = arguments.input("q").value(), p = arguments.input("p").value();
            Tensor rank = arguments.input("rank").value().to(Dtype::Float64);   // [N]
            Tensor score = arguments.input("score").value();                    // [N]
            double tau = std::exp(arguments.input("log_tau").value().item());
            double rank_weight = arguments.number("rank_weight") * arguments.number("use_ranks");
            double score_weight = arguments.number("score_weight") * arguments.number("use_scores");
            int64_t N = q.size(0);
            Tensor same_query = same_query_mask(arguments.input("qid").value());  // M [N, N]
            // Row j of group_scores holds the scores of j's group, -inf elsewhere.   [N, N]
            Tensor group_scores = keep_where(repeat_rows(score, N), same_query, -INFINITY);
            Tensor highest = max(group_scores, 1).values;                                     // [N]
            Tensor lowest = -max(keep_where(-repeat_rows(score, N), same_query, -INFINITY), 1).values;  // [N]
            Tensor range = highest - lowest;                                                  // [N]
            // A group whose scores are all equal has score_j - lowest = 0: divide it by 1.
            Tensor scaled_score = (score - lowest) / keep_where(range, step(range), 1.0);    // sh [N]
            Tensor exponent = rank * -rank_weight + scaled_score * score_weight;               // a [N]
            Tensor group_total = matmul(same_query, exp(exponent).reshape({N, 1})).reshape({N});  // [N]
            Tensor weights = exp(exponent) / group_total;                                      // w [N]
            Tensor T = same_query * weights.reshape({1, N});                                   // [N, N]
            Tensor l = matmul(q, p, Transpose::Second) / tau;                                  // [N, N]
            Tensor P = softmax(l);                                                             // [N, N]
            Tensor G = (P - T) / static_cast<double>(N);                                       // [N, N]
            std::vector<DerivationStep> steps{
                {"tau", "exp(log_tau)", Tensor::scalar(tau, Dtype::Float64)},
                {"M", "1 where qid_j = qid_i (j in G(i)), else 0", same_query},
                {"sh", "(score_j - min_G score) / (max_G score - min_G score), 0 when max = min", scaled_score},
                {"a", "-rank_weight use_ranks rank_j + score_weight use_scores sh_j", exponent},
                {"w", "exp(a_j) / sum_{k in G(j)} exp(a_k)", weights},
                {"T", "M_ij w_j", T},
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
