#include "losses/rank_infonce.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "losses/random_inputs.h"
#include "losses/random_query_groups.h"
#include "losses/loss_common.h"
#include "losses/soft_target_cross_entropy.h"
#include "losses/worked_example.h"

namespace nce::losses {
namespace {

constexpr const char* kLoss = "rank_infonce";

// The weight w_j of every row j within its group G(j) (spec, rank_infonce):
//   sh_j = (score_j - min_G score) / (max_G score - min_G score), or 0 when max = min
//   w~_j = exp(a_j),   a_j = -rank_weight·rank_j·use_ranks + score_weight·sh_j·use_scores
//   w_j  = w~_j / sum_{k in G(j)} w~_k
// w is a softmax of a over each group, so it is computed shifted by the group's largest a:
// a large rank_weight·rank then cannot underflow every w~ of a group to 0 (and 0/0).
std::vector<double> rank_weights(const std::vector<int64_t>& qid, const std::vector<double>& rank,
                                 const std::vector<double>& score, const RankInfonceOptions& options) {
    std::map<int64_t, std::vector<size_t>> groups;  // qid -> the rows of its group
    for (size_t j = 0; j < qid.size(); ++j) groups[qid[j]].push_back(j);

    std::vector<double> weights(qid.size(), 0.0);
    for (const auto& [id, members] : groups) {
        double lowest = 0, highest = 0;
        if (options.use_scores) {
            lowest = highest = score[members[0]];
            for (size_t j : members) lowest = std::min(lowest, score[j]), highest = std::max(highest, score[j]);
        }
        std::vector<double> exponent(members.size(), 0.0);  // a_j for the group's rows
        for (size_t m = 0; m < members.size(); ++m) {
            size_t j = members[m];
            if (options.use_ranks) exponent[m] -= options.rank_weight * rank[j];
            if (options.use_scores) {
                double scaled_score = highest > lowest ? (score[j] - lowest) / (highest - lowest) : 0.0;  // sh_j
                exponent[m] += options.score_weight * scaled_score;
            }
            NCE_CHECK(std::isfinite(exponent[m]),
                      "{}: the weight exponent of row {} (-rank_weight·rank + score_weight·sh) is {}; lower "
                      "rank_weight or the ranks",
                      kLoss, j, exponent[m]);
        }
        double largest = *std::max_element(exponent.begin(), exponent.end());
        double total = 0;
        for (double a : exponent) total += std::exp(a - largest);
        for (size_t m = 0; m < members.size(); ++m) weights[members[m]] = std::exp(exponent[m] - largest) / total;
    }
    return weights;
}

// T_ij = w_j for j in G(i), else 0     [N, N]; every row sums to 1.
Tensor weighted_group_targets(const std::vector<int64_t>& qid, const std::vector<double>& weights, Dtype dtype) {
    int64_t rows = static_cast<int64_t>(qid.size());
    std::vector<double> targets(static_cast<size_t>(rows * rows), 0.0);
    for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < rows; ++j)
            if (qid[j] == qid[i]) targets[i * rows + j] = weights[j];
    return Tensor::from_vector(targets, {rows, rows}, dtype);
}

}  // namespace

// l = q p^T / tau                     q, p: [N, d]    l: [N, N]
// T_ij = w_j for j in G(i)            [N, N]   (data: no gradient flows into rank or score)
// L = -(1/N) sum_ij T_ij log P_ij     P = softmax rows of l
//
// dL/dl = (P - T) / N                 rows of T sum to 1 (soft_target_cross_entropy.h)
// dL/dq = dL/dl · p / tau             [N, N]·[N, d]
// dL/dp = (dL/dl)^T · q / tau         [N, N]^T·[N, d]
// dL/dtau = -(1/tau) sum_ij dL/dl_ij · l_ij = -(1/tau) sum(q ⊙ dL/dq)
//           because sum_j dL/dl_ij l_ij = q_i · (dL/dl · p)_i / tau = q_i · dL/dq_i
// dL/dlog_tau = tau · dL/dtau = -sum(q ⊙ dL/dq)    (0 while tau sits at its floor 1e-4)
Var rank_infonce(const Var& q, const Var& p, const Tensor& qid, const Tensor& rank, const Tensor& score,
                 const Var& log_tau, const RankInfonceOptions& options) {
    check_matrix(q, kLoss, "q");
    check_matrix(p, kLoss, "p");
    check_same_shape(q, p, kLoss, "q", "p");
    NCE_CHECK(q.dtype() == p.dtype(), "{}: q is {} but p is {}; give both the same dtype", kLoss,
              dtype_name(q.dtype()), dtype_name(p.dtype()));
    int64_t rows = q.size(0);
    check_min_rows(rows, 2, kLoss, "N (rows of q; the other rows are the negatives)");
    std::vector<int64_t> ids = read_ids(Var(qid), rows, kLoss, "qid");
    NCE_CHECK(options.rank_weight >= 0 && std::isfinite(options.rank_weight),
              "{}: parameter rank_weight must be a finite number >= 0, got {}", kLoss, options.rank_weight);
    NCE_CHECK(options.score_weight >= 0 && std::isfinite(options.score_weight),
              "{}: parameter score_weight must be a finite number >= 0, got {}", kLoss, options.score_weight);
    NCE_CHECK(rank.defined() || !options.use_ranks,
              "{}: input rank is missing; it is required when use_ranks=1 (give rank, or set use_ranks=0)", kLoss);
    NCE_CHECK(score.defined() || !options.use_scores,
              "{}: input score is missing; it is required when use_scores=1 (give score, or set use_scores=0)",
              kLoss);
    std::vector<double> ranks = rank.defined() ? read_values(Var(rank), rows, kLoss, "rank") : std::vector<double>{};
    std::vector<double> scores =
        score.defined() ? read_values(Var(score), rows, kLoss, "score") : std::vector<double>{};
    // tau is checked even when log_tau makes it unused (spec, Conventions).
    NCE_CHECK(options.tau > 0 && std::isfinite(options.tau), "{}: parameter tau must be a finite number > 0, got {}",
              kLoss, options.tau);
    Temperature temperature = resolve_temperature(log_tau, options.tau, kLoss);

    Tensor logits = matmul(q.value(), p.value(), Transpose::Second) * (1.0 / temperature.tau);  // [N, N]
    Tensor targets = weighted_group_targets(ids, rank_weights(ids, ranks, scores, options), q.dtype());  // [N, N]
    SoftTargetCrossEntropy forward = soft_target_cross_entropy(logits, targets);

    return Var::from_op(kLoss, forward.loss, {q, p, log_tau},
        [qv = q.value(), pv = p.value(), probabilities = forward.probabilities, targets, temperature,
         log_tau_like = log_tau.detach()](const Tensor& dloss) -> Grads {
            Tensor dlogits = soft_target_cross_entropy_gradient(probabilities, targets) * dloss;  // [N, N]
            LogitGradients gradients = backward_through_logits(dlogits, qv, pv, temperature, log_tau_like);
            return {gradients.dq, gradients.dp, gradients.dlog_tau};
        });
}

LossDefinition rank_infonce_definition() {
    LossDefinition loss;
    loss.name = kLoss;
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
