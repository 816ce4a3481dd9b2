// The losses over query groups: multi_positive, rank_infonce, hard_negative_infonce.
// Each is proved three ways in float64: (1) its hand backward against finite differences
// (gradcheck, log_tau included); (2) against the same formula composed from Var ops and
// differentiated by autograd; (3) against the spec's closed forms and plain-loop references
// in long double. Then stability (tiny tau, huge logits, identical rows) and bad inputs.
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "losses/losses.h"
#include "losses/random_inputs.h"
#include "losses/random_query_groups.h"
#include "losses/soft_target_cross_entropy.h"
#include "tests/loss_test_helpers.h"
#include "tests/test_helpers.h"

namespace nce {
using testing::relative_to_larger;

namespace grouped_tests {

using losses::RankInfonceOptions;

// ---------------------------------------------------------------------------------------
// Inputs
// ---------------------------------------------------------------------------------------

Tensor query_ids(const std::vector<int64_t>& ids) {
    return Tensor::from_indices(ids, {static_cast<int64_t>(ids.size())});
}

Tensor distinct_query_ids(int64_t rows) {
    std::vector<int64_t> ids(static_cast<size_t>(rows));
    for (int64_t i = 0; i < rows; ++i) ids[i] = 100 + i;
    return query_ids(ids);
}

Tensor one_log_tau(double tau) { return Tensor::full({1}, std::log(tau), Dtype::Float64); }

// The same rows repeated: q_i = row for every i.
Tensor repeated_row(const std::vector<double>& row, int64_t rows) {
    std::vector<double> values;
    for (int64_t i = 0; i < rows; ++i) values.insert(values.end(), row.begin(), row.end());
    return Tensor::from_vector(values, {rows, static_cast<int64_t>(row.size())}, Dtype::Float64);
}

// ---------------------------------------------------------------------------------------
// Naive references: plain loops in long double, written straight from the spec's table
// ---------------------------------------------------------------------------------------

using Matrix = std::vector<std::vector<long double>>;

// l_ij = q_i·p_j / tau
Matrix naive_logits(const Tensor& q, const Tensor& p, long double tau) {
    int64_t rows = q.size(0), dim = q.size(1);
    std::vector<double> qv = q.to_vector(), pv = p.to_vector();
    Matrix logits(rows, std::vector<long double>(rows, 0.0L));
    for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < rows; ++j) {
            long double dot = 0;
            for (int64_t k = 0; k < dim; ++k) dot += static_cast<long double>(qv[i * dim + k]) * pv[j * dim + k];
            logits[i][j] = dot / tau;
        }
    return logits;
}

// log softmax_j(l_i), shifted by the row's largest entry.
long double naive_log_softmax(const Matrix& logits, size_t i, size_t j) {
    long double largest = logits[i][0];
    for (long double value : logits[i]) largest = std::max(largest, value);
    long double total = 0;
    for (long double value : logits[i]) total += std::exp(value - largest);
    return logits[i][j] - largest - std::log(total);
}

// L = (1/N) sum_i [ -(1/|G(i)|) sum_{j in G(i)} log softmax_j(l_i) ]
long double naive_multi_positive(const Tensor& q, const Tensor& p, const Tensor& qid, long double tau) {
    Matrix logits = naive_logits(q, p, tau);
    std::vector<int64_t> ids = qid.to_indices();
    size_t rows = ids.size();
    long double loss = 0;
    for (size_t i = 0; i < rows; ++i) {
        long double group_size = 0, sum_log = 0;
        for (size_t j = 0; j < rows; ++j)
            if (ids[j] == ids[i]) group_size += 1, sum_log += naive_log_softmax(logits, i, j);
        loss += -sum_log / group_size;
    }
    return loss / rows;
}

// w_j of the spec: sh from the group's score range, w~ = exp(-rank_weight·rank·use_ranks) ·
// exp(score_weight·sh·use_scores), normalised over the group.
std::vector<long double> naive_rank_weights(const Tensor& qid, const Tensor& rank, const Tensor& score,
                                            const RankInfonceOptions& options) {
    std::vector<int64_t> ids = qid.to_indices();
    size_t rows = ids.size();
    std::vector<double> ranks = rank.defined() ? rank.to_vector() : std::vector<double>(rows, 0.0);
    std::vector<double> scores = score.defined() ? score.to_vector() : std::vector<double>(rows, 0.0);
    auto unnormalised = [&](size_t j) {
        long double lowest = scores[j], highest = scores[j];
        for (size_t k = 0; k < rows; ++k)
            if (ids[k] == ids[j])
                lowest = std::min<long double>(lowest, scores[k]), highest = std::max<long double>(highest, scores[k]);
        long double scaled = highest == lowest ? 0.0L : (scores[j] - lowest) / (highest - lowest);
        return std::exp(-options.rank_weight * ranks[j] * (options.use_ranks ? 1 : 0)) *
               std::exp(options.score_weight * scaled * (options.use_scores ? 1 : 0));
    };
    std::vector<long double> weights(rows);
    for (size_t j = 0; j < rows; ++j) {
        long double total = 0;
        for (size_t k = 0; k < rows; ++k)
            if (ids[k] == ids[j]) total += unnormalised(k);
        weights[j] = unnormalised(j) / total;
    }
    return weights;
}

// L = (1/N) sum_i [ -sum_{j in G(i)} w_j log softmax_j(l_i) ]
long double naive_rank_infonce(const Tensor& q, const Tensor& p, const Tensor& qid, const Tensor& rank,
                               const Tensor& score, const RankInfonceOptions& options, long double tau) {
    Matrix logits = naive_logits(q, p, tau);
    std::vector<long double> weights = naive_rank_weights(qid, rank, score, options);
    std::vector<int64_t> ids = qid.to_indices();
    size_t rows = ids.size();
    long double loss = 0;
    for (size_t i = 0; i < rows; ++i)
        for (size_t j = 0; j < rows; ++j)
            if (ids[j] == ids[i]) loss -= weights[j] * naive_log_softmax(logits, i, j);
    return loss / rows;
}

// L = (1/N) sum_i ( lse_j l_ij - l_ii ) + weight · mean over pairs i != j, same qid, of exp(l_ij)
long double naive_hard_negative_infonce(const Tensor& q, const Tensor& p, const Tensor& qid, long double tau,
                                        long double weight) {
    Matrix logits = naive_logits(q, p, tau);
    std::vector<int64_t> ids = qid.to_indices();
    size_t rows = ids.size();
    long double infonce = 0, pair_sum = 0, pairs = 0;
    for (size_t i = 0; i < rows; ++i) {
        infonce -= naive_log_softmax(logits, i, i);
        for (size_t j = 0; j < rows; ++j)
            if (i != j && ids[i] == ids[j]) pair_sum += std::exp(logits[i][j]), pairs += 1;
    }
    return infonce / rows + weight * (pairs > 0 ? pair_sum / pairs : 0.0L);
}

// ---------------------------------------------------------------------------------------
// The same losses composed from Var ops (autograd differentiates them)
// ---------------------------------------------------------------------------------------

// l = q p^T / tau; with log_tau, tau = exp(log_tau) (these tests stay above the clamp).
Var composed_logits(const Var& q, const Var& p, const Var& log_tau, double tau) {
    Var similarities = matmul(q, p, Transpose::Second);  // [N, N]
    return log_tau.defined() ? similarities / exp(log_tau) : similarities * (1.0 / tau);
}

// -(1/N) sum(T ⊙ log_softmax(l)) for a constant target matrix T [N, N]
Var composed_soft_target_loss(const Var& logits, const Tensor& targets) {
    double rows = static_cast<double>(logits.size(0));
    return sum(Var(targets) * log_softmax(logits)) * (-1.0 / rows);
}

// T_ij = weights[j] for qid_j = qid_i, else 0 (built by the test, from its own weights).
Tensor group_target_matrix(const Tensor& qid, const std::function<long double(size_t i, size_t j)>& weight) {
    std::vector<int64_t> ids = qid.to_indices();
    int64_t rows = static_cast<int64_t>(ids.size());
    std::vector<double> values(static_cast<size_t>(rows * rows), 0.0);
    for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < rows; ++j)
            if (ids[i] == ids[j]) values[i * rows + j] = static_cast<double>(weight(i, j));
    return Tensor::from_vector(values, {rows, rows}, Dtype::Float64);
}

Var composed_multi_positive(const Var& q, const Var& p, const Tensor& qid, const Var& log_tau, double tau) {
    std::vector<int64_t> ids = qid.to_indices();
    Tensor targets = group_target_matrix(qid, [&](size_t i, size_t) {
        return 1.0L / static_cast<long double>(std::count(ids.begin(), ids.end(), ids[i]));
    });
    return composed_soft_target_loss(composed_logits(q, p, log_tau, tau), targets);
}

Var composed_rank_infonce(const Var& q, const Var& p, const Tensor& qid, const Tensor& rank, const Tensor& score,
                          const Var& log_tau, const RankInfonceOptions& options) {
    std::vector<long double> weights = naive_rank_weights(qid, rank, score, options);
    Tensor targets = group_target_matrix(qid, [&](size_t, size_t j) { return weights[j]; });
    return composed_soft_target_loss(composed_logits(q, p, log_tau, options.tau), targets);
}

// cross_entropy(l, arange(N)) + weight · sum(M ⊙ exp(l)) / K
Var composed_hard_negative_infonce(const Var& q, const Var& p, const Tensor& qid, const Var& log_tau, double tau,
                                   double weight) {
    Var logits = composed_logits(q, p, log_tau, tau);
    int64_t rows = q.size(0);
    std::vector<int64_t> diagonal(static_cast<size_t>(rows));
    for (int64_t i = 0; i < rows; ++i) diagonal[i] = i;
    Var loss = cross_entropy(logits, Tensor::from_indices(diagonal, {rows}));
    std::vector<int64_t> ids = qid.to_indices();
    std::vector<double> pairs(static_cast<size_t>(rows * rows), 0.0);
    double pair_count = 0;
    for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < rows; ++j)
            if (i != j && ids[i] == ids[j]) pairs[i * rows + j] = 1.0, pair_count += 1;
    if (pair_count == 0) return loss;
    Var pair_mask(Tensor::from_vector(pairs, {rows, rows}, Dtype::Float64));
    return loss + sum(pair_mask * exp(logits)) * (weight / pair_count);
}

// The engine's own cross_entropy: InfoNCE with the positive of q_i at p_i.
Var infonce_by_cross_entropy(const Var& q, const Var& p, const Var& log_tau, double tau) {
    int64_t rows = q.size(0);
    std::vector<int64_t> diagonal(static_cast<size_t>(rows));
    for (int64_t i = 0; i < rows; ++i) diagonal[i] = i;
    return cross_entropy(composed_logits(q, p, log_tau, tau), Tensor::from_indices(diagonal, {rows}));
}

// ---------------------------------------------------------------------------------------
// The losses as functions of (q, p, log_tau), data and parameters bound
// ---------------------------------------------------------------------------------------

using LossOf = std::function<Var(const Var& q, const Var& p, const Var& log_tau)>;

LossOf multi_positive_of(const Tensor& qid, double tau) {
    return
        [=](const Var& q, const Var& p, const Var& log_tau) { return losses::multi_positive(q, p, qid, log_tau, tau); };
}
LossOf composed_multi_positive_of(const Tensor& qid, double tau) {
    return [=](const Var& q, const Var& p, const Var& log_tau) {
        return composed_multi_positive(q, p, qid, log_tau, tau);
    };
}
LossOf rank_infonce_of(const Tensor& qid, const Tensor& rank, const Tensor& score, const RankInfonceOptions& options) {
    return [=](const Var& q, const Var& p, const Var& log_tau) {
        return losses::rank_infonce(q, p, qid, rank, score, log_tau, options);
    };
}
LossOf composed_rank_infonce_of(const Tensor& qid, const Tensor& rank, const Tensor& score,
                                const RankInfonceOptions& options) {
    return [=](const Var& q, const Var& p, const Var& log_tau) {
        return composed_rank_infonce(q, p, qid, rank, score, log_tau, options);
    };
}
LossOf hard_negative_infonce_of(const Tensor& qid, double tau, double weight) {
    return [=](const Var& q, const Var& p, const Var& log_tau) {
        return losses::hard_negative_infonce(q, p, qid, log_tau, tau, weight);
    };
}
LossOf composed_hard_negative_infonce_of(const Tensor& qid, double tau, double weight) {
    return [=](const Var& q, const Var& p, const Var& log_tau) {
        return composed_hard_negative_infonce(q, p, qid, log_tau, tau, weight);
    };
}
LossOf infonce_by_cross_entropy_of(double tau) {
    return [=](const Var& q, const Var& p, const Var& log_tau) { return infonce_by_cross_entropy(q, p, log_tau, tau); };
}

// ---------------------------------------------------------------------------------------
// Evaluating a loss and comparing results
// ---------------------------------------------------------------------------------------

struct Evaluated {
    Tensor loss, dq, dp, dlog_tau;  // dlog_tau undefined for a fixed tau
};

// The loss at (q, p, log_tau) and its gradients by backward(). log_tau may be undefined.
Evaluated evaluate(const LossOf& loss_of, const Tensor& q, const Tensor& p, const Tensor& log_tau) {
    Var q_leaf = Var::parameter(q), p_leaf = Var::parameter(p);
    Var log_tau_leaf = log_tau.defined() ? Var::parameter(log_tau) : Var();
    Var loss = loss_of(q_leaf, p_leaf, log_tau_leaf);
    loss.backward();
    return {loss.value(), q_leaf.grad(), p_leaf.grad(), log_tau.defined() ? log_tau_leaf.grad() : Tensor()};
}

// Central finite differences (nce::gradcheck) on q, p and, when given, log_tau.
void check_finite_differences(const LossOf& loss_of, const Tensor& q, const Tensor& p, const Tensor& log_tau) {
    std::vector<Tensor> inputs = {q, p};
    if (log_tau.defined()) inputs.push_back(log_tau);
    GradcheckResult result =
        gradcheck([&](const std::vector<Var>& x) { return loss_of(x[0], x[1], x.size() > 2 ? x[2] : Var()); }, inputs);
    CHECK_MESSAGE(result.passed, "max_rel_error " << result.max_rel_error << " > " << result.tolerance);
}

void check_same_loss_and_gradients(const Evaluated& ours, const Evaluated& reference, double tolerance) {
    CHECK(relative_to_larger(ours.loss, reference.loss) < tolerance);
    CHECK(relative_to_larger(ours.dq, reference.dq) < tolerance);
    CHECK(relative_to_larger(ours.dp, reference.dp) < tolerance);
    REQUIRE(ours.dlog_tau.defined() == reference.dlog_tau.defined());
    if (reference.dlog_tau.defined()) CHECK(relative_to_larger(ours.dlog_tau, reference.dlog_tau) < tolerance);
}

// Both losses evaluated at (q, p, log_tau): loss and every gradient equal to `tolerance`.
void check_same_at(const LossOf& ours, const LossOf& reference, const Tensor& q, const Tensor& p, const Tensor& log_tau,
                   double tolerance) {
    check_same_loss_and_gradients(evaluate(ours, q, p, log_tau), evaluate(reference, q, p, log_tau), tolerance);
}

void check_close_to(double value, long double reference, double tolerance) {
    CHECK(std::abs(static_cast<long double>(value) - reference) <= tolerance * std::max(1.0L, std::abs(reference)));
}

void check_all_finite(const Evaluated& result) {
    CHECK(all_finite(result.loss));
    CHECK(all_finite(result.dq));
    CHECK(all_finite(result.dp));
    if (result.dlog_tau.defined()) CHECK(all_finite(result.dlog_tau));
}

struct BatchShape {
    int64_t rows, dim;
};
const BatchShape kShapes[] = {{2, 3}, {5, 8}, {9, 16}};

// qid_i = i / 2: rows paired two by two, so the batch surely has same-group pairs.
Tensor paired_query_ids(int64_t rows) {
    std::vector<int64_t> ids(static_cast<size_t>(rows));
    for (int64_t i = 0; i < rows; ++i) ids[i] = i / 2;
    return query_ids(ids);
}


// =======================================================================================
// The shared core: cross-entropy against a matrix of target weights
// =======================================================================================

TEST_CASE("soft_target_cross_entropy: loss against loops, gradient against finite differences") {
    Generator generator(11);
    const int64_t rows = 3, columns = 4;
    Tensor logits = generator.normal({rows, columns}, Dtype::Float64, 0.0, 2.0);
    // Rows that do not sum to 1, so the rowsum(T) factor of the gradient is exercised.
    Tensor targets = generator.uniform({rows, columns}, Dtype::Float64, 0.0, 2.0);

    losses::SoftTargetCrossEntropy result = losses::soft_target_cross_entropy(logits, targets);
    std::vector<double> l = logits.to_vector(), t = targets.to_vector();
    long double expected = 0;
    for (int64_t i = 0; i < rows; ++i) {
        long double total = 0;
        for (int64_t k = 0; k < columns; ++k) total += std::exp(static_cast<long double>(l[i * columns + k]));
        for (int64_t j = 0; j < columns; ++j) expected -= t[i * columns + j] * (l[i * columns + j] - std::log(total));
    }
    check_close_to(result.loss.item(), expected / rows, 1e-13);

    Tensor gradient = losses::soft_target_cross_entropy_gradient(result.probabilities, targets);
    const double eps = 1e-6;
    for (int64_t k = 0; k < rows * columns; ++k) {
        std::vector<double> up = l, down = l;
        up[k] += eps, down[k] -= eps;
        double loss_up =
            losses::soft_target_cross_entropy(Tensor::from_vector(up, {rows, columns}, Dtype::Float64), targets)
                .loss.item();
        double loss_down =
            losses::soft_target_cross_entropy(Tensor::from_vector(down, {rows, columns}, Dtype::Float64), targets)
                .loss.item();
        CHECK(std::abs(gradient.at(k) - (loss_up - loss_down) / (2 * eps)) < 1e-8);
    }
}

// =======================================================================================
// multi_positive
// =======================================================================================

TEST_CASE("multi_positive: hand backward equals finite differences, composition and loops") {
    Generator generator(1);
    for (auto [rows, dim] : kShapes) {
        Tensor q = losses::random_unit_rows(generator, rows, dim), p = losses::random_unit_rows(generator, rows, dim);
        Tensor qid = losses::random_query_ids(generator, rows);
        for (double tau : {0.1, 0.5}) {
            // A learnable temperature (log_tau) and a fixed one (undefined log_tau).
            for (Tensor log_tau : {one_log_tau(tau), Tensor()}) {
                CAPTURE(rows);
                CAPTURE(tau);
                CAPTURE(log_tau.defined());
                // (1) finite differences on q, p (and log_tau)
                check_finite_differences(multi_positive_of(qid, tau), q, p, log_tau);
                // (2) autograd through -(1/N) sum(T ⊙ log_softmax(q p^T / tau))
                check_same_at(multi_positive_of(qid, tau), composed_multi_positive_of(qid, tau), q, p, log_tau, 1e-12);
                // (3) the spec's formula, in plain loops
                Evaluated ours = evaluate(multi_positive_of(qid, tau), q, p, log_tau);
                check_close_to(ours.loss.item(), naive_multi_positive(q, p, qid, tau), 1e-12);
            }
        }
    }
}

TEST_CASE("multi_positive: groups scattered over the batch, against loops") {
    Generator generator(2);
    Tensor q = losses::random_unit_rows(generator, 6, 4), p = losses::random_unit_rows(generator, 6, 4);
    Tensor qid = query_ids({7, 3, 7, -1, 3, 7});  // groups {0,2,5}, {1,4}, {3}
    Var loss = losses::multi_positive(Var(q), Var(p), qid, Var(), 0.2);
    check_close_to(loss.value().item(), naive_multi_positive(q, p, qid, 0.2), 1e-12);
    CHECK(loss.shape() == Shape{});
    CHECK(loss.dtype() == Dtype::Float64);
    // Ids above 2^53 that a float64 would merge (2^53 + 1 rounds to 2^53) stay distinct groups.
    const int64_t large = int64_t{1} << 53;
    Tensor large_qid = query_ids({large, large + 1, large, -1, large + 1, large});  // the same groups
    CHECK(losses::multi_positive(Var(q), Var(p), large_qid, Var(), 0.2).value().item() == loss.value().item());
}

// =======================================================================================
// rank_infonce
// =======================================================================================

TEST_CASE("rank_infonce: hand backward equals finite differences, composition and loops") {
    Generator generator(3);
    std::vector<RankInfonceOptions> option_sets = {
        {0.1, 0.1, 0.05, true, false},  // the defaults
        {0.2, 0.5, 0.3, true, true},
        {0.1, 0.1, 0.7, false, true},
        {0.5, 2.0, 0.0, true, false},
    };
    for (auto [rows, dim] : kShapes) {
        Tensor q = losses::random_unit_rows(generator, rows, dim), p = losses::random_unit_rows(generator, rows, dim);
        Tensor qid = losses::random_query_ids(generator, rows);
        Tensor rank = losses::random_ranks_in_groups(generator, qid);
        Tensor score = generator.uniform({rows}, Dtype::Float64, -1.0, 3.0);
        for (const RankInfonceOptions& options : option_sets) {
            for (Tensor log_tau : {one_log_tau(options.tau), Tensor()}) {
                CAPTURE(rows);
                CAPTURE(options.rank_weight);
                CAPTURE(options.score_weight);
                CAPTURE(options.use_scores);
                CAPTURE(log_tau.defined());
                LossOf ours = rank_infonce_of(qid, rank, score, options);
                // (1) finite differences on q, p (and log_tau); qid, rank, score are data
                check_finite_differences(ours, q, p, log_tau);
                // (2) autograd through the composition, T built from the test's own weights
                check_same_at(ours, composed_rank_infonce_of(qid, rank, score, options), q, p, log_tau, 1e-12);
                // (3) the spec's formula, in plain loops
                check_close_to(evaluate(ours, q, p, log_tau).loss.item(),
                               naive_rank_infonce(q, p, qid, rank, score, options, options.tau), 1e-12);
            }
        }
    }
}

TEST_CASE("rank_infonce: float ranks, tied scores and uniform weights") {
    Generator generator(4);
    Tensor q = losses::random_unit_rows(generator, 7, 5), p = losses::random_unit_rows(generator, 7, 5);
    Tensor qid = query_ids({4, 2, 4, 9, 2, 4, 2});

    SUBCASE("a float rank gives what the same int64 rank gives, and fractional ranks match loops") {
        Tensor rank_int = query_ids({0, 1, 2, 0, 0, 1, 2});
        Tensor rank_float = rank_int.to(Dtype::Float64);
        RankInfonceOptions options;
        Var from_int = losses::rank_infonce(Var(q), Var(p), qid, rank_int, Tensor(), Var(), options);
        Var from_float = losses::rank_infonce(Var(q), Var(p), qid, rank_float, Tensor(), Var(), options);
        CHECK(from_int.value().item() == from_float.value().item());
        Tensor rank_fractional = Tensor::from_vector({0.5, 1.25, 2.0, 0.0, 3.5, 0.75, 0.0}, {7}, Dtype::Float64);
        options.rank_weight = 0.8;
        Var fractional = losses::rank_infonce(Var(q), Var(p), qid, rank_fractional, Tensor(), Var(), options);
        check_close_to(fractional.value().item(),
                       naive_rank_infonce(q, p, qid, rank_fractional, Tensor(), options, 0.1), 1e-12);
    }
    SUBCASE("scores tied within a group give sh = 0 there, as the spec says") {
        Tensor score = Tensor::from_vector({0.3, 2.0, 0.3, 5.0, 1.0, 0.3, 4.0}, {7}, Dtype::Float64);  // group 4 tied
        RankInfonceOptions options{0.1, 0.1, 0.9, false, true};
        Var loss = losses::rank_infonce(Var(q), Var(p), qid, Tensor(), score, Var(), options);
        check_close_to(loss.value().item(), naive_rank_infonce(q, p, qid, Tensor(), score, options, 0.1), 1e-12);
    }
    SUBCASE("closed form: with use_ranks=0 and use_scores=0 (or zero weights) it is multi_positive") {
        Tensor rank = query_ids({0, 1, 2, 0, 0, 1, 2});
        Tensor score = generator.uniform({7}, Dtype::Float64);
        for (RankInfonceOptions options :
             {RankInfonceOptions{0.3, 0.5, 0.5, false, false}, RankInfonceOptions{0.3, 0.0, 0.0, true, true}}) {
            check_same_at(rank_infonce_of(qid, rank, score, options), multi_positive_of(qid, 0.3), q, p,
                          one_log_tau(0.3), 1e-14);
        }
    }
}

// =======================================================================================
// hard_negative_infonce
// =======================================================================================

TEST_CASE("hard_negative_infonce: hand backward equals finite differences, composition and loops") {
    Generator generator(5);
    for (auto [rows, dim] : kShapes) {
        Tensor q = losses::random_unit_rows(generator, rows, dim), p = losses::random_unit_rows(generator, rows, dim);
        for (Tensor qid : {losses::random_query_ids(generator, rows), paired_query_ids(rows)}) {
            for (double weight : {0.0, 1.0, 2.5}) {
                double tau = 0.2;
                for (Tensor log_tau : {one_log_tau(tau), Tensor()}) {
                    CAPTURE(rows);
                    CAPTURE(weight);
                    CAPTURE(log_tau.defined());
                    LossOf ours = hard_negative_infonce_of(qid, tau, weight);
                    // (1) finite differences on q, p (and log_tau)
                    check_finite_differences(ours, q, p, log_tau);
                    // (2) autograd through cross_entropy(l, arange(N)) + weight · sum(M ⊙ exp(l)) / K
                    check_same_at(ours, composed_hard_negative_infonce_of(qid, tau, weight), q, p, log_tau, 1e-12);
                    // (3) the spec's formula, in plain loops
                    check_close_to(evaluate(ours, q, p, log_tau).loss.item(),
                                   naive_hard_negative_infonce(q, p, qid, tau, weight), 1e-12);
                }
            }
        }
    }
}

TEST_CASE("hard_negative_infonce: the penalty averages over ordered same-group pairs") {
    // Rows 0 and 1 share a query id: the pairs are (0,1) and (1,0), K = 2, and
    //   q_0·p_1 = (1,0)·(1,0) = 1      q_1·p_0 = (0,1)·(0.6,0.8) = 0.8
    // so the penalty is weight · (exp(1/tau) + exp(0.8/tau)) / 2. The InfoNCE part does not
    // depend on qid, so it cancels in the difference with all ids distinct.
    Tensor q = Tensor::from_vector({1, 0, 0, 1, 0.6, 0.8}, {3, 2}, Dtype::Float64);
    Tensor p = Tensor::from_vector({0.6, 0.8, 1, 0, 0, 1}, {3, 2}, Dtype::Float64);
    double tau = 0.5, weight = 3.0;
    Var with_pairs = losses::hard_negative_infonce(Var(q), Var(p), query_ids({1, 1, 2}), Var(), tau, weight);
    Var without_pairs = losses::hard_negative_infonce(Var(q), Var(p), query_ids({1, 2, 3}), Var(), tau, weight);
    double penalty = weight * (std::exp(1.0 / tau) + std::exp(0.8 / tau)) / 2;
    check_close_to(with_pairs.value().item() - without_pairs.value().item(), penalty, 1e-13);
}

// =======================================================================================
// Closed forms shared by the three losses
// =======================================================================================

TEST_CASE("grouped losses: with all query ids distinct each is infonce = cross_entropy(q p^T / tau, arange(N))") {
    Generator generator(6);
    for (auto [rows, dim] : kShapes) {
        Tensor q = losses::random_unit_rows(generator, rows, dim), p = losses::random_unit_rows(generator, rows, dim);
        Tensor qid = distinct_query_ids(rows);
        Tensor rank = losses::random_ranks_in_groups(generator, qid), score = generator.uniform({rows}, Dtype::Float64);
        double tau = 0.15;
        RankInfonceOptions options{tau, 0.7, 0.4, true, true};
        for (Tensor log_tau : {one_log_tau(tau), Tensor()}) {
            CAPTURE(rows);
            CAPTURE(log_tau.defined());
            LossOf infonce = infonce_by_cross_entropy_of(tau);
            check_same_at(multi_positive_of(qid, tau), infonce, q, p, log_tau, 1e-12);
            check_same_at(rank_infonce_of(qid, rank, score, options), infonce, q, p, log_tau, 1e-12);
            // No same-group pair: the penalty is 0 whatever the weight.
            check_same_at(hard_negative_infonce_of(qid, tau, 5.0), infonce, q, p, log_tau, 1e-12);
        }
    }
}

TEST_CASE("grouped losses: identical rows give loss log N and dL/dq = 0") {
    // Every logit equals c = q·p / tau, so P_ij = 1/N and -sum_j T_ij log P_ij = log N for
    // any target row summing to 1. dL/dq_i = sum_j G_ij p / tau = 0 since each row of G sums to 0.
    const int64_t rows = 6;
    Tensor q = repeated_row({0.6, 0.0, 0.8}, rows),
           p = repeated_row({0.0, 1.0 / std::sqrt(2.0), 1.0 / std::sqrt(2.0)}, rows);
    Tensor qid = query_ids({0, 0, 1, 1, 1, 2});
    Tensor rank = query_ids({0, 1, 2, 0, 1, 0});
    double tau = 0.05, weight = 0.5;
    double logit = (0.8 / std::sqrt(2.0)) / tau;
    RankInfonceOptions options;
    options.tau = tau;
    for (auto [name, loss_of, expected] : std::vector<std::tuple<const char*, LossOf, double>>{
             {"multi_positive", multi_positive_of(qid, tau), std::log(6.0)},
             {"rank_infonce", rank_infonce_of(qid, rank, Tensor(), options), std::log(6.0)},
             // 8 ordered pairs, each with exp(c): the penalty is weight · exp(c).
             {"hard_negative_infonce", hard_negative_infonce_of(qid, tau, weight),
              std::log(6.0) + weight * std::exp(logit)}}) {
        CAPTURE(name);
        Evaluated result = evaluate(loss_of, q, p, one_log_tau(tau));
        check_all_finite(result);
        check_close_to(result.loss.item(), expected, 1e-12);
        if (std::string(name) != "hard_negative_infonce") CHECK(max_abs(result.dq) < 1e-12);
    }
}

TEST_CASE("grouped losses: a log_tau below the clamp gets gradient 0 and tau = 1e-4") {
    Generator generator(7);
    Tensor q = losses::random_unit_rows(generator, 4, 3), p = losses::random_unit_rows(generator, 4, 3);
    Tensor qid = query_ids({0, 1, 0, 2}), rank = query_ids({0, 0, 1, 0});
    Tensor log_tau = one_log_tau(1e-6);  // exp(log_tau) < 1e-4: clamped
    Evaluated multi = evaluate(multi_positive_of(qid, 0.1), q, p, log_tau);
    CHECK(multi.dlog_tau.item() == 0.0);
    CHECK(multi.dlog_tau.shape() == Shape{1});
    check_close_to(multi.loss.item(), naive_multi_positive(q, p, qid, 1e-4), 1e-12);
    CHECK(evaluate(rank_infonce_of(qid, rank, Tensor(), {}), q, p, log_tau).dlog_tau.item() == 0.0);
    CHECK(evaluate(hard_negative_infonce_of(distinct_query_ids(4), 0.1, 1.0), q, p, log_tau).dlog_tau.item() == 0.0);
}

// =======================================================================================
// Stability
// =======================================================================================

TEST_CASE("grouped losses: tau = 1e-4 and logits in the thousands stay finite and match the references") {
    Generator generator(8);
    const int64_t rows = 8, dim = 4;
    Tensor q = losses::random_unit_rows(generator, rows, dim), p = losses::random_unit_rows(generator, rows, dim);
    Tensor qid = query_ids({0, 1, 0, 2, 1, 0, 3, 2});
    Tensor rank = losses::random_ranks_in_groups(generator, qid), score = generator.uniform({rows}, Dtype::Float64);
    RankInfonceOptions options{0.1, 0.3, 0.2, true, true};
    for (double tau : {1e-4, 1e-3}) {  // logits up to 1e4 and 1e3 in size
        CAPTURE(tau);
        Tensor log_tau = one_log_tau(tau);
        options.tau = tau;
        Evaluated multi = evaluate(multi_positive_of(qid, tau), q, p, log_tau);
        Evaluated ranked = evaluate(rank_infonce_of(qid, rank, score, options), q, p, log_tau);
        check_all_finite(multi);
        check_all_finite(ranked);
        // The long-double loops compute the same shifted log-softmax.
        check_close_to(multi.loss.item(), naive_multi_positive(q, p, qid, tau), 1e-12);
        check_close_to(ranked.loss.item(), naive_rank_infonce(q, p, qid, rank, score, options, tau), 1e-12);
        // log_softmax is itself stable, so the composition is a valid reference here too.
        check_same_at(multi_positive_of(qid, tau), composed_multi_positive_of(qid, tau), q, p, log_tau, 1e-12);
        check_same_at(rank_infonce_of(qid, rank, score, options), composed_rank_infonce_of(qid, rank, score, options),
                      q, p, log_tau, 1e-12);
        // Without same-group pairs hard_negative_infonce is plain InfoNCE, finite at any tau.
        Tensor distinct = distinct_query_ids(rows);
        Evaluated hard = evaluate(hard_negative_infonce_of(distinct, tau, 1.0), q, p, log_tau);
        check_all_finite(hard);
        check_close_to(hard.loss.item(), naive_hard_negative_infonce(q, p, distinct, tau, 1.0), 1e-12);
    }
}

TEST_CASE("hard_negative_infonce: a same-group pair whose exp(l_ij) overflows the dtype is an error") {
    // q_0 = p_1 and qid_0 = qid_1: l_01 = 1 / tau.
    Tensor q = Tensor::from_vector({1, 0, 0, 1, 0.6, 0.8}, {3, 2}, Dtype::Float64);
    Tensor p = Tensor::from_vector({0, 1, 1, 0, 0.8, -0.6}, {3, 2}, Dtype::Float64);
    Tensor qid = query_ids({5, 5, 6});
    // float64: exp overflows above log(DBL_MAX) = 709.78.
    CHECK_ERROR_MENTIONS(losses::hard_negative_infonce(Var(q), Var(p), qid, Var(), 1e-4), "overflows float64");
    CHECK_ERROR_MENTIONS(losses::hard_negative_infonce(Var(q), Var(p), qid, Var(), 1e-4), "raise tau or lower weight");
    CHECK_ERROR_MENTIONS(losses::hard_negative_infonce(Var(q), Var(p), qid, Var::parameter(one_log_tau(1e-3))),
                         "i=0, j=1");
    // float32: exp overflows above log(FLT_MAX) = 88.72; l = 100 is fine in float64.
    Var q32(q.to(Dtype::Float32)), p32(p.to(Dtype::Float32));
    CHECK_ERROR_MENTIONS(losses::hard_negative_infonce(q32, p32, qid, Var(), 0.01), "overflows float32");
    Var fine = losses::hard_negative_infonce(Var(q), Var(p), qid, Var(), 0.01);
    CHECK(all_finite(fine.value()));
    // Each exp(l_ij) finite but weight · mean overflowing is the same error.
    CHECK_ERROR_MENTIONS(losses::hard_negative_infonce(Var(q), Var(p), qid, Var(), 1.0 / 700.0, 1e300), "overflows");
    // The same batch with the pair split into two groups has no penalty and no overflow.
    Var split = losses::hard_negative_infonce(Var(q), Var(p), query_ids({5, 7, 6}), Var(), 1e-4);
    CHECK(all_finite(split.value()));
}

TEST_CASE("grouped losses: float32 agrees with float64") {
    Generator generator(9);
    Tensor q = losses::random_unit_rows(generator, 6, 8), p = losses::random_unit_rows(generator, 6, 8);
    Tensor qid = query_ids({0, 1, 0, 1, 2, 0}), rank = query_ids({0, 0, 1, 1, 0, 2});
    std::vector<std::pair<const char*, LossOf>> cases = {
        {"multi_positive", multi_positive_of(qid, 0.1)},
        {"rank_infonce", rank_infonce_of(qid, rank, Tensor(), {})},
        {"hard_negative_infonce", hard_negative_infonce_of(qid, 0.1, 1.0)}};
    for (const auto& [name, loss_of] : cases) {
        CAPTURE(name);
        Evaluated wide = evaluate(loss_of, q, p, one_log_tau(0.1));
        Evaluated narrow =
            evaluate(loss_of, q.to(Dtype::Float32), p.to(Dtype::Float32), one_log_tau(0.1).to(Dtype::Float32));
        CHECK(narrow.loss.dtype() == Dtype::Float32);
        CHECK(narrow.dq.dtype() == Dtype::Float32);
        CHECK(relative_to_larger(narrow.loss.to(Dtype::Float64), wide.loss) < 1e-5);
        CHECK(relative_to_larger(narrow.dq.to(Dtype::Float64), wide.dq) < 1e-4);
        CHECK(relative_to_larger(narrow.dp.to(Dtype::Float64), wide.dp) < 1e-4);
        CHECK(relative_to_larger(narrow.dlog_tau.to(Dtype::Float64), wide.dlog_tau) < 1e-4);
    }
}

// =======================================================================================
// Bad inputs: one line naming the input or parameter
// =======================================================================================

TEST_CASE("grouped losses: bad inputs are errors that name the input") {
    Generator generator(10);
    Var q(losses::random_unit_rows(generator, 4, 3)), p(losses::random_unit_rows(generator, 4, 3));
    Tensor qid = query_ids({0, 1, 0, 2}), rank = query_ids({0, 0, 1, 0});
    Tensor short_qid = query_ids({0, 1, 0});
    Var one_q(losses::random_unit_rows(generator, 1, 3)), one_p(losses::random_unit_rows(generator, 1, 3));

    SUBCASE("qid length does not match N") {
        CHECK_ERROR_MENTIONS(losses::multi_positive(q, p, short_qid, Var()), "qid must be a vector of length 4");
        CHECK_ERROR_MENTIONS(losses::rank_infonce(q, p, short_qid, rank, Tensor(), Var()), "qid");
        CHECK_ERROR_MENTIONS(losses::hard_negative_infonce(q, p, short_qid, Var()), "qid");
        CHECK_ERROR_MENTIONS(losses::rank_infonce(q, p, qid, query_ids({0, 1}), Tensor(), Var()),
                             "rank must be a vector of length 4");
    }
    SUBCASE("N < 2") {
        CHECK_ERROR_MENTIONS(losses::multi_positive(one_q, one_p, query_ids({0}), Var()), "N (rows of q");
        CHECK_ERROR_MENTIONS(losses::rank_infonce(one_q, one_p, query_ids({0}), query_ids({0}), Tensor(), Var()),
                             ">= 2");
        CHECK_ERROR_MENTIONS(losses::hard_negative_infonce(one_q, one_p, query_ids({0}), Var()), ">= 2");
    }
    SUBCASE("rank missing with use_ranks=1, score missing with use_scores=1") {
        CHECK_ERROR_MENTIONS(losses::rank_infonce(q, p, qid, Tensor(), Tensor(), Var()), "input rank is missing");
        CHECK_ERROR_MENTIONS(losses::rank_infonce(q, p, qid, rank, Tensor(), Var(), {0.1, 0.1, 0.05, true, true}),
                             "input score is missing");
        // Without its flag the input may be absent.
        CHECK(all_finite(
            losses::rank_infonce(q, p, qid, Tensor(), Tensor(), Var(), {0.1, 0.1, 0.05, false, false}).value()));
    }
    SUBCASE("shapes, dtypes and values of the embeddings") {
        Var wide_p(losses::random_unit_rows(generator, 4, 5));
        CHECK_ERROR_MENTIONS(losses::multi_positive(q, wide_p, qid, Var()), "must have the same shape");
        CHECK_ERROR_MENTIONS(losses::hard_negative_infonce(q, Var(p.value().to(Dtype::Float32)), qid, Var()),
                             "same dtype");
        Tensor with_nan = q.value().clone();
        with_nan.data<double>()[2] = std::nan("");
        CHECK_ERROR_MENTIONS(losses::rank_infonce(Var(with_nan), p, qid, rank, Tensor(), Var()), "q contains NaN");
        CHECK_ERROR_MENTIONS(losses::multi_positive(Var(q.value().reshape({12})), p, qid, Var()), "q must be a matrix");
    }
    SUBCASE("parameters out of range and a malformed log_tau") {
        CHECK_ERROR_MENTIONS(losses::multi_positive(q, p, qid, Var(), 0.0), "parameter tau");
        CHECK_ERROR_MENTIONS(losses::hard_negative_infonce(q, p, qid, Var(), 0.1, -1.0), "parameter weight");
        CHECK_ERROR_MENTIONS(losses::rank_infonce(q, p, qid, rank, Tensor(), Var(), {0.1, -0.5, 0.05, true, false}),
                             "parameter rank_weight");
        CHECK_ERROR_MENTIONS(losses::rank_infonce(q, p, qid, rank, Tensor(), Var(), {0.1, 0.1, -2.0, true, false}),
                             "parameter score_weight");
        // A rank so large that -rank_weight·rank is -inf: the row is named.
        CHECK_ERROR_MENTIONS(losses::rank_infonce(q, p, qid, Tensor::from_vector({0, 0, 1e300, 0}, {4}, Dtype::Float64),
                                                  Tensor(), Var(), {0.1, 1e10, 0.05, true, false}),
                             "the weight exponent of row 2");
        Var two_log_taus = Var::parameter(Tensor::full({2}, -2.0, Dtype::Float64));
        CHECK_ERROR_MENTIONS(losses::multi_positive(q, p, qid, two_log_taus), "log_tau must have one element");
    }
}

// =======================================================================================
// The registry-facing definitions
// =======================================================================================

TEST_CASE("grouped losses: definitions take the spec's inputs and defaults and match the typed functions") {
    Generator generator(12);
    SUBCASE("multi_positive") {
        losses::LossDefinition definition = losses::multi_positive_definition();
        std::map<std::string, Tensor> example = definition.example(generator, 6, 4);
        Var loss = definition.compute(losses::make_arguments(definition, example, {{"tau", "0.3"}}));
        Var typed =
            losses::multi_positive(Var(example["q"]), Var(example["p"]), example["qid"], Var(example["log_tau"]), 0.3);
        CHECK(loss.value().item() == typed.value().item());
        Var fixed = definition.compute(losses::make_arguments(
            definition, {{"q", example["q"]}, {"p", example["p"]}, {"qid", example["qid"]}}, {}));
        check_close_to(fixed.value().item(), naive_multi_positive(example["q"], example["p"], example["qid"], 0.1),
                       1e-12);
    }
    SUBCASE("rank_infonce") {
        losses::LossDefinition definition = losses::rank_infonce_definition();
        std::map<std::string, Tensor> example = definition.example(generator, 6, 4);
        example.erase("log_tau");
        Var loss = definition.compute(
            losses::make_arguments(definition, example, {{"use_scores", "1"}, {"rank_weight", "0.4"}}));
        RankInfonceOptions options{0.1, 0.4, 0.05, true, true};
        check_close_to(loss.value().item(),
                       naive_rank_infonce(example["q"], example["p"], example["qid"], example["rank"], example["score"],
                                          options, 0.1),
                       1e-12);
        example.erase("rank");
        CHECK_ERROR_MENTIONS(definition.compute(losses::make_arguments(definition, example, {})),
                             "input rank is missing");
        example.erase("score");
        CHECK_ERROR_MENTIONS(
            definition.compute(losses::make_arguments(definition, example, {{"use_ranks", "0"}, {"use_scores", "1"}})),
            "input score is missing");
        CHECK(
            all_finite(definition.compute(losses::make_arguments(definition, example, {{"use_ranks", "0"}})).value()));
    }
    SUBCASE("hard_negative_infonce") {
        losses::LossDefinition definition = losses::hard_negative_infonce_definition();
        std::map<std::string, Tensor> example = definition.example(generator, 6, 4);
        example.erase("log_tau");
        Var loss = definition.compute(losses::make_arguments(definition, example, {{"weight", "0.5"}}));
        check_close_to(loss.value().item(),
                       naive_hard_negative_infonce(example["q"], example["p"], example["qid"], 0.1, 0.5), 1e-12);
    }
}

TEST_CASE("grouped losses: examples have groups of 1 to 3 rows and ranks 0..|G|-1 within them") {
    Generator generator(13);
    for (int64_t rows : {2, 7, 20}) {
        Tensor qid = losses::random_query_ids(generator, rows);
        Tensor rank = losses::random_ranks_in_groups(generator, qid);
        std::map<int64_t, std::vector<int64_t>> ranks_of_group;
        std::vector<int64_t> ids = qid.to_indices(), ranks = rank.to_indices();
        for (size_t i = 0; i < ids.size(); ++i) ranks_of_group[ids[i]].push_back(ranks[i]);
        for (auto& [id, group_ranks] : ranks_of_group) {
            CHECK(group_ranks.size() >= 1);
            CHECK(group_ranks.size() <= 3);
            std::sort(group_ranks.begin(), group_ranks.end());
            for (size_t r = 0; r < group_ranks.size(); ++r) CHECK(group_ranks[r] == static_cast<int64_t>(r));
        }
    }
}

}  // namespace grouped_tests

}  // namespace nce
