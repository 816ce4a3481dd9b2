// Table 2 of docs/losses_contract.md, its softmax and regression losses: multi_positive_in,
// relaxed_hard_negative, gist, margin_mse, cosent. Each is proved three ways in float64:
// (1) its hand backward against finite differences (gradcheck); (2) against the same formula
// composed from Var ops and differentiated by autograd; (3) against the spec's closed forms
// and plain-loop references in long double. Then the pitfalls the issue names, stability
// (tiny tau, huge scale, identical rows), float32, bad inputs and the registry-facing
// definitions.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "losses/losses.h"
#include "losses/random_inputs.h"
#include "losses/random_query_groups.h"
#include "tests/loss_test_helpers.h"
#include "tests/test_helpers.h"

namespace nce {
using testing::relative_to_larger;

namespace grouped_table2_tests {

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

// qid_i = i / 2: rows paired two by two (the last one alone when N is odd).
Tensor paired_query_ids(int64_t rows) {
    std::vector<int64_t> ids(static_cast<size_t>(rows));
    for (int64_t i = 0; i < rows; ++i) ids[i] = i / 2;
    return query_ids(ids);
}

Tensor values_of(const std::vector<double>& values) {
    return Tensor::from_vector(values, {static_cast<int64_t>(values.size())}, Dtype::Float64);
}

Tensor one_log_tau(double tau) { return Tensor::full({1}, std::log(tau), Dtype::Float64); }

Tensor unit_rows(Generator& generator, int64_t rows, int64_t dim) {
    return losses::random_unit_rows(generator, rows, dim);
}

// x + noise · (random unit rows), each row renormalised: a row that belongs with x's row.
Tensor near_rows(Generator& generator, const Tensor& x, double noise) {
    Tensor y = x + unit_rows(generator, x.size(0), x.size(1)) * noise;
    return y / sqrt(sum(y * y, 1, /*keepdim=*/true));
}

// The same row repeated.
Tensor repeated_row(const std::vector<double>& row, int64_t rows) {
    std::vector<double> values;
    for (int64_t i = 0; i < rows; ++i) values.insert(values.end(), row.begin(), row.end());
    return Tensor::from_vector(values, {rows, static_cast<int64_t>(row.size())}, Dtype::Float64);
}

struct BatchShape {
    int64_t rows, dim;
};
const BatchShape kShapes[] = {{2, 3}, {5, 8}, {9, 16}};

// ---------------------------------------------------------------------------------------
// Naive references: plain loops in long double, written straight from the spec's table
// ---------------------------------------------------------------------------------------

using Matrix = std::vector<std::vector<long double>>;

long double dot_rows(const Tensor& x, int64_t i, const Tensor& y, int64_t j) {
    int64_t dim = x.size(1);
    long double total = 0;
    for (int64_t k = 0; k < dim; ++k) total += static_cast<long double>(x.at(i * dim + k)) * y.at(j * dim + k);
    return total;
}

// x_i·y_j / tau
Matrix naive_logits(const Tensor& x, const Tensor& y, long double tau) {
    int64_t rows = x.size(0);
    Matrix logits(rows, std::vector<long double>(rows, 0.0L));
    for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < rows; ++j) logits[i][j] = dot_rows(x, i, y, j) / tau;
    return logits;
}

// log-sum-exp of the entries that are kept, shifted by the largest of them.
long double naive_lse(const std::vector<long double>& values, const std::vector<bool>& kept) {
    long double largest = -std::numeric_limits<long double>::infinity();
    for (size_t k = 0; k < values.size(); ++k)
        if (kept[k]) largest = std::max(largest, values[k]);
    long double total = 0;
    for (size_t k = 0; k < values.size(); ++k)
        if (kept[k]) total += std::exp(values[k] - largest);
    return largest + std::log(total);
}

long double naive_lse(const std::vector<long double>& values) {
    return naive_lse(values, std::vector<bool>(values.size(), true));
}

// L = (1/N) sum_i -log( (1/|G(i)|) sum_{j in G(i)} softmax_j(l_i) )
//   = (1/N) sum_i ( lse_j l_ij - lse_{j in G(i)} l_ij + log |G(i)| )
long double naive_multi_positive_in(const Tensor& q, const Tensor& p, const Tensor& qid, long double tau) {
    Matrix logits = naive_logits(q, p, tau);
    std::vector<int64_t> ids = qid.to_indices();
    size_t rows = ids.size();
    long double loss = 0;
    for (size_t i = 0; i < rows; ++i) {
        std::vector<bool> in_group(rows);
        long double group_size = 0;
        for (size_t j = 0; j < rows; ++j) in_group[j] = ids[j] == ids[i], group_size += in_group[j] ? 1 : 0;
        loss += naive_lse(logits[i]) - naive_lse(logits[i], in_group) + std::log(group_size);
    }
    return loss / rows;
}

// t_ij of the spec: 1 - p_relax at i, p_relax / (|G(i)| - 1) at the rest of G(i); one-hot when |G(i)| = 1.
Matrix naive_relaxed_targets(const Tensor& qid, long double p_relax) {
    std::vector<int64_t> ids = qid.to_indices();
    size_t rows = ids.size();
    Matrix targets(rows, std::vector<long double>(rows, 0.0L));
    for (size_t i = 0; i < rows; ++i) {
        long double others = -1;
        for (size_t j = 0; j < rows; ++j) others += ids[j] == ids[i] ? 1 : 0;
        for (size_t j = 0; j < rows; ++j) {
            if (j == i) targets[i][j] = others == 0 ? 1.0L : 1.0L - p_relax;
            else if (ids[j] == ids[i]) targets[i][j] = p_relax / others;
        }
    }
    return targets;
}

// L = (1/N) sum_i sum_j t_ij ( log t_ij - log softmax_j(l_i) ),  0·log 0 = 0
long double naive_relaxed_hard_negative(const Tensor& q, const Tensor& p, const Tensor& qid, long double tau,
                                        long double p_relax) {
    Matrix logits = naive_logits(q, p, tau);
    Matrix targets = naive_relaxed_targets(qid, p_relax);
    size_t rows = logits.size();
    long double loss = 0;
    for (size_t i = 0; i < rows; ++i) {
        long double lse = naive_lse(logits[i]);
        for (size_t j = 0; j < rows; ++j)
            if (targets[i][j] > 0) loss += targets[i][j] * (std::log(targets[i][j]) - (logits[i][j] - lse));
    }
    return loss / rows;
}

// Which of the 3N entries of row i the spec keeps: [AP | AA | PP].
std::vector<bool> naive_gist_kept(const Tensor& ga, const Tensor& gp, int64_t i, long double margin, bool relative) {
    int64_t rows = ga.size(0);
    long double theta = dot_rows(ga, i, gp, i);
    long double threshold = relative ? theta * (1 - margin) : theta - margin;
    std::vector<bool> kept(static_cast<size_t>(3 * rows));
    for (int64_t j = 0; j < rows; ++j) {
        kept[j] = j == i || !(dot_rows(ga, i, gp, j) > threshold);                  // AP: diagonal never masked
        kept[rows + j] = j != i && !(dot_rows(ga, i, ga, j) > threshold);           // AA: diagonal always masked
        kept[2 * rows + j] = j != i && !(dot_rows(gp, i, gp, j) > threshold);       // PP: diagonal always masked
    }
    return kept;
}

// L = (1/N) sum_i ( lse over the kept entries of [AP_i | AA_i | PP_i] - AP_ii )
long double naive_gist(const Tensor& a, const Tensor& p, const Tensor& ga, const Tensor& gp, long double tau,
                       long double margin, bool relative) {
    int64_t rows = a.size(0);
    Matrix ap = naive_logits(a, p, tau), aa = naive_logits(a, a, tau), pp = naive_logits(p, p, tau);
    long double loss = 0;
    for (int64_t i = 0; i < rows; ++i) {
        std::vector<long double> row(ap[i]);
        row.insert(row.end(), aa[i].begin(), aa[i].end());
        row.insert(row.end(), pp[i].begin(), pp[i].end());
        loss += naive_lse(row, naive_gist_kept(ga, gp, i, margin, relative)) - ap[i][i];
    }
    return loss / rows;
}

// L = (1/N) sum_i ( (q_i·p_i - q_i·n_i) - label_i )^2
long double naive_margin_mse(const Tensor& q, const Tensor& p, const Tensor& n, const Tensor& label) {
    int64_t rows = q.size(0);
    long double loss = 0;
    for (int64_t i = 0; i < rows; ++i) {
        long double residual = dot_rows(q, i, p, i) - dot_rows(q, i, n, i) - label.at(i);
        loss += residual * residual;
    }
    return loss / rows;
}

// L = log( 1 + sum over label_i < label_j of exp(s_i - s_j) ), s_i = scale x_i·y_i: lse over {0} and the pairs.
long double naive_cosent(const Tensor& x, const Tensor& y, const Tensor& label, long double scale) {
    int64_t rows = x.size(0);
    std::vector<long double> terms{0.0L};
    for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < rows; ++j)
            if (label.at(i) < label.at(j)) terms.push_back(scale * (dot_rows(x, i, y, i) - dot_rows(x, j, y, j)));
    if (terms.size() == 1) return 0.0L;
    long double largest = *std::max_element(terms.begin(), terms.end());
    long double total = 0;
    for (long double term : terms) total += std::exp(term - largest);
    return largest == 0 ? std::log1p(total - 1) : largest + std::log(total);
}

// ---------------------------------------------------------------------------------------
// The same losses composed from Var ops (autograd differentiates them)
// ---------------------------------------------------------------------------------------

Tensor matrix_of(const Matrix& values) {
    int64_t rows = static_cast<int64_t>(values.size()), columns = static_cast<int64_t>(values[0].size());
    std::vector<double> flat;
    for (const auto& row : values)
        for (long double value : row) flat.push_back(static_cast<double>(value));
    return Tensor::from_vector(flat, {rows, columns}, Dtype::Float64);
}

// 1 where qid_j = qid_i     [N, N]
Tensor same_group(const Tensor& qid) {
    std::vector<int64_t> ids = qid.to_indices();
    Matrix mask(ids.size(), std::vector<long double>(ids.size(), 0.0L));
    for (size_t i = 0; i < ids.size(); ++i)
        for (size_t j = 0; j < ids.size(); ++j) mask[i][j] = ids[i] == ids[j] ? 1 : 0;
    return matrix_of(mask);
}

Tensor arange_ids(int64_t rows) {
    std::vector<int64_t> ids(static_cast<size_t>(rows));
    for (int64_t i = 0; i < rows; ++i) ids[i] = i;
    return query_ids(ids);
}

// l = q p^T / tau; with log_tau, tau = exp(log_tau) (these tests stay above the clamp).
Var composed_logits(const Var& q, const Var& p, const Var& log_tau, double tau) {
    Var similarities = matmul(q, p, Transpose::Second);  // [N, N]
    return log_tau.defined() ? similarities / exp(log_tau) : similarities * (1.0 / tau);
}

// -(1/N) sum_i log( (1/|G(i)|) sum_j M_ij softmax_j(l_i) )
Var composed_multi_positive_in(const Var& q, const Var& p, const Tensor& qid, const Var& log_tau, double tau) {
    Tensor mask = same_group(qid);
    Var group_mass = sum(exp(log_softmax(composed_logits(q, p, log_tau, tau))) * Var(mask), 1);  // [N]
    Var group_size(sum(mask, 1));                                                                // [N]
    return mean(log(group_mass / group_size)) * -1.0;
}

// (1/N) sum_ij t_ij log t_ij - (1/N) sum(t ⊙ log_softmax(l))
Var composed_relaxed_hard_negative(const Var& q, const Var& p, const Tensor& qid, double tau, double p_relax) {
    Matrix targets = naive_relaxed_targets(qid, p_relax);
    long double entropy = 0;
    for (const auto& row : targets)
        for (long double t : row)
            if (t > 0) entropy += t * std::log(t);
    double rows = static_cast<double>(q.size(0));
    Var cross = sum(Var(matrix_of(targets)) * log_softmax(composed_logits(q, p, Var(), tau))) * (-1.0 / rows);
    return cross + static_cast<double>(entropy) / rows;
}

// cross_entropy([a p^T | a a^T | p p^T] / tau + mask, arange(N)), mask 0 where kept, -inf where masked
Var composed_gist(const Var& a, const Var& p, const Tensor& ga, const Tensor& gp, double tau, double margin,
                  bool relative) {
    int64_t rows = a.size(0);
    Matrix additive(rows, std::vector<long double>(3 * rows, 0.0L));
    for (int64_t i = 0; i < rows; ++i) {
        std::vector<bool> kept = naive_gist_kept(ga, gp, i, margin, relative);
        for (int64_t k = 0; k < 3 * rows; ++k)
            if (!kept[k]) additive[i][k] = -std::numeric_limits<long double>::infinity();
    }
    Var logits = concat({matmul(a, p, Transpose::Second), matmul(a, a, Transpose::Second),
                         matmul(p, p, Transpose::Second)},
                        1) * (1.0 / tau);
    return cross_entropy(logits + Var(matrix_of(additive)), arange_ids(rows));
}

// mean( (sum(q ⊙ (p - n), 1) - label)^2 )
Var composed_margin_mse(const Var& q, const Var& p, const Var& n, const Tensor& label) {
    Var residual = sum(q * (p - n), 1) - Var(label);
    return mean(residual * residual);
}

// log(1 + sum(M ⊙ exp(s_i - s_j))), M_ij = [label_i < label_j]: fine for moderate s.
Var composed_cosent(const Var& x, const Var& y, const Tensor& label, double scale) {
    int64_t rows = x.size(0);
    Var s = sum(x * y, 1) * scale;  // [N]
    Var differences = reshape(s, {rows, 1}) - reshape(s, {1, rows});
    Matrix pairs(rows, std::vector<long double>(rows, 0.0L));
    for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < rows; ++j) pairs[i][j] = label.at(i) < label.at(j) ? 1 : 0;
    return log(sum(exp(differences) * Var(matrix_of(pairs))) + 1.0);
}

// ---------------------------------------------------------------------------------------
// Evaluating a loss of its differentiable inputs, and comparing
// ---------------------------------------------------------------------------------------

// A loss as a function of its differentiable inputs (data, guides, parameters bound).
using LossOf = std::function<Var(const std::vector<Var>&)>;

struct Evaluated {
    Tensor loss;
    std::vector<Tensor> grads;  // one per input, in order
};

Evaluated evaluate(const LossOf& loss_of, const std::vector<Tensor>& inputs) {
    std::vector<Var> leaves;
    for (const Tensor& input : inputs) leaves.push_back(Var::parameter(input));
    Var loss = loss_of(leaves);
    loss.backward();
    Evaluated result{loss.value(), {}};
    for (const Var& leaf : leaves) result.grads.push_back(leaf.grad());
    return result;
}

// Loss and every gradient equal to `tolerance` (relative to the values' scale).
void check_same_at(const LossOf& ours, const LossOf& reference, const std::vector<Tensor>& inputs,
                   double tolerance = 1e-12) {
    Evaluated mine = evaluate(ours, inputs), theirs = evaluate(reference, inputs);
    CHECK(relative_to_larger(mine.loss, theirs.loss) < tolerance);
    for (size_t k = 0; k < inputs.size(); ++k) {
        CAPTURE(k);
        REQUIRE(mine.grads[k].defined());
        CHECK(relative_to_larger(mine.grads[k], theirs.grads[k]) < tolerance);
    }
}

// Central finite differences (nce::gradcheck) on every input.
void check_finite_differences(const LossOf& loss_of, const std::vector<Tensor>& inputs) {
    GradcheckResult result = gradcheck(loss_of, inputs);
    CHECK_MESSAGE(result.passed, "max_rel_error " << result.max_rel_error << " > " << result.tolerance);
}

void check_close_to(double value, long double reference, double tolerance) {
    CHECK(std::abs(static_cast<long double>(value) - reference) <= tolerance * std::max(1.0L, std::abs(reference)));
}

void check_all_finite(const Evaluated& result) {
    CHECK(all_finite(result.loss));
    for (const Tensor& grad : result.grads) CHECK(all_finite(grad));
}

void check_zero_gradients(const Evaluated& result) {
    for (const Tensor& grad : result.grads) CHECK(max_abs(grad) == 0.0);
}

// ---------------------------------------------------------------------------------------
// The losses as functions of their differentiable inputs
// ---------------------------------------------------------------------------------------

// inputs: q, p and, when the test gives it, log_tau
LossOf multi_positive_in_of(const Tensor& qid, double tau) {
    return [=](const std::vector<Var>& x) {
        return losses::multi_positive_in(x[0], x[1], qid, x.size() > 2 ? x[2] : Var(), tau);
    };
}
LossOf composed_multi_positive_in_of(const Tensor& qid, double tau) {
    return [=](const std::vector<Var>& x) {
        return composed_multi_positive_in(x[0], x[1], qid, x.size() > 2 ? x[2] : Var(), tau);
    };
}
LossOf multi_positive_of(const Tensor& qid, double tau) {
    return [=](const std::vector<Var>& x) {
        return losses::multi_positive(x[0], x[1], qid, x.size() > 2 ? x[2] : Var(), tau);
    };
}
// InfoNCE through the engine's cross_entropy: the positive of q_i is p_i.
LossOf infonce_by_cross_entropy_of(double tau) {
    return [=](const std::vector<Var>& x) {
        return cross_entropy(composed_logits(x[0], x[1], x.size() > 2 ? x[2] : Var(), tau), arange_ids(x[0].size(0)));
    };
}
// inputs: q, p
LossOf relaxed_hard_negative_of(const Tensor& qid, double tau, double p_relax) {
    return [=](const std::vector<Var>& x) { return losses::relaxed_hard_negative(x[0], x[1], qid, tau, p_relax); };
}
LossOf composed_relaxed_hard_negative_of(const Tensor& qid, double tau, double p_relax) {
    return [=](const std::vector<Var>& x) { return composed_relaxed_hard_negative(x[0], x[1], qid, tau, p_relax); };
}
// inputs: a, p (the guides are bound: they get no gradient)
LossOf gist_of(const Tensor& ga, const Tensor& gp, double tau, double margin, bool relative) {
    auto strategy = relative ? losses::GistStrategy::Relative : losses::GistStrategy::Absolute;
    return [=](const std::vector<Var>& x) { return losses::gist(x[0], x[1], Var(ga), Var(gp), tau, margin, strategy); };
}
LossOf composed_gist_of(const Tensor& ga, const Tensor& gp, double tau, double margin, bool relative) {
    return [=](const std::vector<Var>& x) { return composed_gist(x[0], x[1], ga, gp, tau, margin, relative); };
}
// inputs: q, p, n
LossOf margin_mse_of(const Tensor& label) {
    return [=](const std::vector<Var>& x) { return losses::margin_mse(x[0], x[1], x[2], label); };
}
LossOf composed_margin_mse_of(const Tensor& label) {
    return [=](const std::vector<Var>& x) { return composed_margin_mse(x[0], x[1], x[2], label); };
}
// inputs: x, y
LossOf cosent_of(const Tensor& label, double scale) {
    return [=](const std::vector<Var>& x) { return losses::cosent(x[0], x[1], label, scale); };
}
LossOf composed_cosent_of(const Tensor& label, double scale) {
    return [=](const std::vector<Var>& x) { return composed_cosent(x[0], x[1], label, scale); };
}


// =======================================================================================
// multi_positive_in
// =======================================================================================

TEST_CASE("multi_positive_in: hand backward equals finite differences, composition and loops") {
    Generator generator(21);
    for (auto [rows, dim] : kShapes) {
        Tensor q = unit_rows(generator, rows, dim), p = unit_rows(generator, rows, dim);
        for (Tensor qid : {losses::random_query_ids(generator, rows), paired_query_ids(rows)}) {
            // One group holding every row has gradient exactly 0 (its closed form is tested
            // below); finite differences of a zero gradient are all noise.
            std::vector<int64_t> ids = qid.to_indices();
            if (std::count(ids.begin(), ids.end(), ids[0]) == rows) continue;
            for (double tau : {0.1, 0.5}) {
                // A learnable temperature (log_tau) and a fixed one.
                for (bool learnable : {true, false}) {
                    CAPTURE(rows);
                    CAPTURE(tau);
                    CAPTURE(learnable);
                    std::vector<Tensor> inputs{q, p};
                    if (learnable) inputs.push_back(one_log_tau(tau));
                    // (1) finite differences on q, p (and log_tau)
                    check_finite_differences(multi_positive_in_of(qid, tau), inputs);
                    // (2) autograd through -(1/N) sum_i log( sum(M ⊙ softmax(l), 1) / |G(i)| )
                    check_same_at(multi_positive_in_of(qid, tau), composed_multi_positive_in_of(qid, tau), inputs);
                    // (3) the spec's formula, in plain loops
                    check_close_to(evaluate(multi_positive_in_of(qid, tau), inputs).loss.item(),
                                   naive_multi_positive_in(q, p, qid, tau), 1e-12);
                }
            }
        }
    }
}

TEST_CASE("multi_positive_in: closed forms (distinct ids = infonce, one group = log N, Jensen below multi_positive)") {
    Generator generator(22);
    for (auto [rows, dim] : kShapes) {
        Tensor q = unit_rows(generator, rows, dim), p = unit_rows(generator, rows, dim);
        std::vector<Tensor> inputs{q, p, one_log_tau(0.2)};
        CAPTURE(rows);
        // Groups of one: -log softmax_i(l_i), InfoNCE, loss and gradients.
        check_same_at(multi_positive_in_of(distinct_query_ids(rows), 0.2), infonce_by_cross_entropy_of(0.2), inputs);
        // One group holding every row: its softmax mass is 1, so L = -log(1/N) = log N, and
        // Q = P makes every gradient 0.
        Evaluated whole = evaluate(multi_positive_in_of(query_ids(std::vector<int64_t>(rows, 4)), 0.2), inputs);
        check_close_to(whole.loss.item(), std::log(static_cast<long double>(rows)), 1e-14);
        for (const Tensor& grad : whole.grads) CHECK(max_abs(grad) < 1e-14);
        // -log of a mean <= mean of -logs (Jensen): never above multi_positive, equal for groups of one.
        Tensor qid = paired_query_ids(rows);
        double inside = evaluate(multi_positive_in_of(qid, 0.2), inputs).loss.item();
        double outside = evaluate(multi_positive_of(qid, 0.2), inputs).loss.item();
        CHECK(inside <= outside + 1e-15);
        CHECK(inside < outside);  // a real group of 2 with unequal softmax entries: strictly below
    }
}

TEST_CASE("multi_positive_in: a log_tau below the clamp gets gradient 0 in its shape and tau = 1e-4") {
    Generator generator(23);
    Tensor q = unit_rows(generator, 4, 3), p = unit_rows(generator, 4, 3), qid = query_ids({0, 1, 0, 2});
    for (Tensor log_tau : {one_log_tau(1e-6), Tensor::scalar(std::log(1e-6), Dtype::Float64)}) {
        Evaluated result = evaluate(multi_positive_in_of(qid, 0.1), {q, p, log_tau});
        CHECK(result.grads[2].shape() == log_tau.shape());
        CHECK(result.grads[2].item() == 0.0);
        check_close_to(result.loss.item(), naive_multi_positive_in(q, p, qid, 1e-4), 1e-12);
    }
}

// =======================================================================================
// relaxed_hard_negative
// =======================================================================================

TEST_CASE("relaxed_hard_negative: hand backward equals finite differences, composition and loops") {
    Generator generator(31);
    for (auto [rows, dim] : kShapes) {
        Tensor q = unit_rows(generator, rows, dim), p = unit_rows(generator, rows, dim);
        for (Tensor qid : {losses::random_query_ids(generator, rows), paired_query_ids(rows)}) {
            for (double p_relax : {0.0, 0.1, 0.5, 0.9}) {
                for (double tau : {0.1, 0.4}) {
                    CAPTURE(rows);
                    CAPTURE(p_relax);
                    CAPTURE(tau);
                    LossOf ours = relaxed_hard_negative_of(qid, tau, p_relax);
                    check_finite_differences(ours, {q, p});
                    check_same_at(ours, composed_relaxed_hard_negative_of(qid, tau, p_relax), {q, p});
                    check_close_to(evaluate(ours, {q, p}).loss.item(),
                                   naive_relaxed_hard_negative(q, p, qid, tau, p_relax), 1e-12);
                }
            }
        }
    }
}

TEST_CASE("relaxed_hard_negative: p_relax = 0 (0·log 0 = 0) and groups of one are infonce") {
    Generator generator(32);
    for (auto [rows, dim] : kShapes) {
        Tensor q = unit_rows(generator, rows, dim), p = unit_rows(generator, rows, dim);
        CAPTURE(rows);
        LossOf infonce = infonce_by_cross_entropy_of(0.3);
        // p_relax = 0 with real groups: the other group members get t = 0 and add 0·log 0 = 0.
        check_same_at(relaxed_hard_negative_of(paired_query_ids(rows), 0.3, 0.0), infonce, {q, p});
        // Every group of size 1: the one-hot target whatever p_relax is.
        check_same_at(relaxed_hard_negative_of(distinct_query_ids(rows), 0.3, 0.7), infonce, {q, p});
    }
}

TEST_CASE("relaxed_hard_negative: the loss is a KL divergence: >= 0, and 0 when softmax(l_i) = t_i") {
    // N = 2, one group of two, p_relax = r: t = [[1-r, r], [r, 1-r]]. With q_0 = p_0 = (1, 0),
    // q_1 = p_1 = (0, 1)... chosen so that softmax(l_0) = [1-r, r]: l_00 - l_01 = log((1-r)/r).
    double r = 0.2, tau = 0.5;
    double gap = std::log((1 - r) / r) * tau;  // q_0·p_0 - q_0·p_1
    Tensor q = Tensor::from_vector({1, 0, 0, 1}, {2, 2}, Dtype::Float64);
    Tensor p = Tensor::from_vector({gap, 0, 0, gap}, {2, 2}, Dtype::Float64);
    Evaluated at_target = evaluate(relaxed_hard_negative_of(query_ids({3, 3}), tau, r), {q, p});
    CHECK(std::abs(at_target.loss.item()) < 1e-14);
    for (const Tensor& grad : at_target.grads) CHECK(max_abs(grad) < 1e-14);
    Generator generator(33);
    for (int trial = 0; trial < 5; ++trial) {
        Tensor qr = unit_rows(generator, 6, 4), pr = unit_rows(generator, 6, 4);
        CHECK(evaluate(relaxed_hard_negative_of(losses::random_query_ids(generator, 6), 0.2, 0.3), {qr, pr})
                  .loss.item() >= 0.0);
    }
}

// =======================================================================================
// gist
// =======================================================================================

struct GistCase {
    double tau, margin;
    bool relative;
};

TEST_CASE("gist: hand backward equals finite differences, composition and loops, both strategies and margins") {
    Generator generator(41);
    const GistCase cases[] = {{0.01, 0.0, false}, {0.05, 0.1, false}, {0.2, 0.3, false},
                              {0.05, 0.0, true},  {0.05, 0.1, true},  {0.2, 0.5, true}};
    for (auto [rows, dim] : kShapes) {
        Tensor a = unit_rows(generator, rows, dim), p = near_rows(generator, a, 0.8);
        Tensor ga = near_rows(generator, a, 0.3), gp = near_rows(generator, p, 0.3);
        for (const GistCase& c : cases) {
            CAPTURE(rows);
            CAPTURE(c.tau);
            CAPTURE(c.margin);
            CAPTURE(c.relative);
            LossOf ours = gist_of(ga, gp, c.tau, c.margin, c.relative);
            // Rows of length sqrt(10 tau) (at most 1) keep the logits within ±10: at tau = 0.01
            // unit rows give logits of ±100, a saturated softmax and gradients of the size of
            // exp(-50), which differences of a loss of size 1 cannot resolve. The mask comes
            // from the guides only, so it is the same for the shorter rows.
            double length = std::min(1.0, std::sqrt(10 * c.tau));
            check_finite_differences(ours, {a * length, p * length});
            for (double scale : {length, 1.0}) {
                CAPTURE(scale);
                Tensor as = a * scale, ps = p * scale;
                check_same_at(ours, composed_gist_of(ga, gp, c.tau, c.margin, c.relative), {as, ps});
                check_close_to(evaluate(ours, {as, ps}).loss.item(),
                               naive_gist(as, ps, ga, gp, c.tau, c.margin, c.relative), 1e-12);
            }
        }
    }
}

TEST_CASE("gist: the guides choose the mask (both branches taken) and get zero gradients of their shapes") {
    Generator generator(42);
    const int64_t rows = 6, dim = 5, guide_dim = 7;  // the guide model has its own dimension
    Tensor a = unit_rows(generator, rows, dim), p = near_rows(generator, a, 0.8);
    Tensor ga = unit_rows(generator, rows, guide_dim), gp = near_rows(generator, ga, 0.6);
    // Rows 0 and 1 share a guide anchor: ga_0·ga_1 = 1 > theta_0, so the AA entry (0, 1) is masked.
    ga = concat({slice(ga, 0, 0, 1), slice(ga, 0, 0, 1), slice(ga, 0, 2, rows)}, 0);
    // The inputs exercise both branches: some entries masked, some kept, outside the diagonals.
    int64_t masked = 0, kept = 0;
    for (int64_t i = 0; i < rows; ++i) {
        std::vector<bool> row = naive_gist_kept(ga, gp, i, 0.0, false);
        for (int64_t k = 0; k < 3 * rows; ++k)
            if (k != i && k != rows + i && k != 2 * rows + i) (row[k] ? kept : masked) += 1;
    }
    CHECK(masked > 0);
    CHECK(kept > 0);
    // ga, gp as leaves that ask for a gradient: they get zeros of their own shape.
    Var a_leaf = Var::parameter(a), p_leaf = Var::parameter(p), ga_leaf = Var::parameter(ga),
        gp_leaf = Var::parameter(gp);
    Var loss = losses::gist(a_leaf, p_leaf, ga_leaf, gp_leaf, 0.05);
    loss.backward();
    REQUIRE(ga_leaf.grad().defined());
    REQUIRE(gp_leaf.grad().defined());
    CHECK(ga_leaf.grad().shape() == Shape{rows, guide_dim});
    CHECK(gp_leaf.grad().shape() == Shape{rows, guide_dim});
    CHECK(max_abs(ga_leaf.grad()) == 0.0);
    CHECK(max_abs(gp_leaf.grad()) == 0.0);
    CHECK(max_abs(a_leaf.grad()) > 0.0);
    check_close_to(loss.value().item(), naive_gist(a, p, ga, gp, 0.05, 0.0, false), 1e-12);
    // Doubling both guides multiplies every guide similarity and theta_i by 4: with margin 0
    // no comparison changes, so neither does the mask nor the loss: the guides only choose the mask.
    Var same = losses::gist(Var(a), Var(p), Var(ga * 2.0), Var(gp * 2.0), 0.05);
    CHECK(same.value().item() == loss.value().item());
}

TEST_CASE("gist: a fully masked row keeps its positive, so the loss stays finite (and is 0 when every row is)") {
    Generator generator(43);
    const int64_t rows = 5, dim = 4;
    Tensor a = unit_rows(generator, rows, dim), p = unit_rows(generator, rows, dim);
    // All guide rows identical: every guide similarity is theta_i = 1, so with margin 0.5
    // (absolute: 1 > 0.5; relative: 1 > 0.5) every entry is masked except the AP diagonal.
    Tensor guide = repeated_row({0.6, 0.0, 0.8}, rows);
    for (bool relative : {false, true}) {
        CAPTURE(relative);
        Evaluated result = evaluate(gist_of(guide, guide, 0.01, 0.5, relative), {a, p});
        check_all_finite(result);
        // lse over one entry is that entry: L = (1/N) sum_i (AP_ii - AP_ii) = 0, gradients 0.
        CHECK(result.loss.item() == 0.0);
        check_zero_gradients(result);
    }
    // One row fully masked among normal ones: ga_0 = gp_0 = 0 gives theta_0 = 0 and every guide
    // similarity of row 0 equal to 0 > -0.1 = theta_0 - margin, so row 0 keeps only AP_00 and
    // adds 0 to the loss; the other rows are ordinary. Finite, and equal to the loops and the composition.
    Tensor ga = near_rows(generator, a, 0.3), gp = near_rows(generator, p, 0.3);
    std::vector<double> ga_values = ga.to_vector(), gp_values = gp.to_vector();
    for (int64_t k = 0; k < dim; ++k) ga_values[k] = 0.0, gp_values[k] = 0.0;
    Tensor ga_zero_row = Tensor::from_vector(ga_values, {rows, dim}, Dtype::Float64);
    Tensor gp_zero_row = Tensor::from_vector(gp_values, {rows, dim}, Dtype::Float64);
    std::vector<bool> row_zero = naive_gist_kept(ga_zero_row, gp_zero_row, 0, 0.1, false);
    CHECK(std::count(row_zero.begin(), row_zero.end(), true) == 1);
    Evaluated result = evaluate(gist_of(ga_zero_row, gp_zero_row, 0.01, 0.1, false), {a, p});
    check_all_finite(result);
    check_close_to(result.loss.item(), naive_gist(a, p, ga_zero_row, gp_zero_row, 0.01, 0.1, false), 1e-12);
    check_same_at(gist_of(ga_zero_row, gp_zero_row, 0.01, 0.1, false),
                  composed_gist_of(ga_zero_row, gp_zero_row, 0.01, 0.1, false), {a, p});
}

TEST_CASE("gist: AP diagonal never masked, AA and PP diagonals always; relative with margin 0 = absolute") {
    Generator generator(44);
    const int64_t rows = 4, dim = 3;
    Tensor a = unit_rows(generator, rows, dim), p = unit_rows(generator, rows, dim);
    // gp = ga, unit rows far apart: theta_i = 1 and GAA_ii = GPP_ii = 1 = theta_i, not above it,
    // so only the "always masked" rule takes the AA and PP diagonals out; every other entry
    // has a guide similarity below 1 and stays. The row is then [AP_i· | AA_ij, j != i | PP_ij, j != i].
    Tensor guide = unit_rows(generator, rows, dim);
    Var loss = losses::gist(Var(a), Var(p), Var(guide), Var(guide), 0.1);
    Matrix ap = naive_logits(a, p, 0.1), aa = naive_logits(a, a, 0.1), pp = naive_logits(p, p, 0.1);
    long double expected = 0;
    for (int64_t i = 0; i < rows; ++i) {
        std::vector<long double> row(ap[i]);
        for (int64_t j = 0; j < rows; ++j)
            if (j != i) row.push_back(aa[i][j]), row.push_back(pp[i][j]);
        expected += naive_lse(row) - ap[i][i];
    }
    check_close_to(loss.value().item(), expected / rows, 1e-12);
    // relative with margin 0 masks above theta_i (1 - 0) = theta_i - 0: the same mask.
    Tensor ga = near_rows(generator, a, 0.4), gp = near_rows(generator, p, 0.4);
    check_same_at(gist_of(ga, gp, 0.05, 0.0, true), gist_of(ga, gp, 0.05, 0.0, false), {a, p}, 1e-300);  // bit for bit
}

// =======================================================================================
// margin_mse
// =======================================================================================

TEST_CASE("margin_mse: hand backward equals finite differences, composition and loops") {
    Generator generator(51);
    for (auto [rows, dim] : {BatchShape{1, 3}, BatchShape{2, 3}, BatchShape{5, 8}, BatchShape{9, 16}}) {
        CAPTURE(rows);
        Tensor q = unit_rows(generator, rows, dim), p = unit_rows(generator, rows, dim);
        Tensor n = unit_rows(generator, rows, dim);
        Tensor label = generator.uniform({rows}, Dtype::Float64, -1.0, 2.0);
        check_finite_differences(margin_mse_of(label), {q, p, n});
        check_same_at(margin_mse_of(label), composed_margin_mse_of(label), {q, p, n});
        check_close_to(evaluate(margin_mse_of(label), {q, p, n}).loss.item(), naive_margin_mse(q, p, n, label), 1e-12);
    }
}

TEST_CASE("margin_mse: closed forms (labels equal to the student's margins give 0; one row by hand)") {
    Generator generator(52);
    Tensor q = unit_rows(generator, 4, 3), p = unit_rows(generator, 4, 3), n = unit_rows(generator, 4, 3);
    std::vector<double> margins;
    for (int64_t i = 0; i < 4; ++i) margins.push_back(static_cast<double>(dot_rows(q, i, p, i) - dot_rows(q, i, n, i)));
    Evaluated exact = evaluate(margin_mse_of(values_of(margins)), {q, p, n});
    CHECK(exact.loss.item() < 1e-30);
    for (const Tensor& grad : exact.grads) CHECK(max_abs(grad) < 1e-15);
    // N = 1 by hand: q = (1, 0), p = (0.6, 0.8), n = (0, 1), label 0.1: r = 0.6 - 0 - 0.1 = 0.5,
    // L = 0.25; dL/dq = 2r (p - n) = (0.6, -0.2), dL/dp = 2r q = (1, 0), dL/dn = -(1, 0).
    Evaluated one = evaluate(margin_mse_of(values_of({0.1})),
                             {Tensor::from_vector({1, 0}, {1, 2}, Dtype::Float64),
                              Tensor::from_vector({0.6, 0.8}, {1, 2}, Dtype::Float64),
                              Tensor::from_vector({0, 1}, {1, 2}, Dtype::Float64)});
    check_close_to(one.loss.item(), 0.25, 1e-15);
    CHECK(relative_to_larger(one.grads[0], Tensor::from_vector({0.6, -0.2}, {1, 2}, Dtype::Float64)) < 1e-15);
    CHECK(relative_to_larger(one.grads[1], Tensor::from_vector({1, 0}, {1, 2}, Dtype::Float64)) < 1e-15);
    CHECK(relative_to_larger(one.grads[2], Tensor::from_vector({-1, 0}, {1, 2}, Dtype::Float64)) < 1e-15);
}

// =======================================================================================
// cosent
// =======================================================================================

TEST_CASE("cosent: hand backward equals finite differences, composition and loops") {
    Generator generator(61);
    for (auto [rows, dim] : {BatchShape{1, 3}, BatchShape{2, 3}, BatchShape{5, 8}, BatchShape{9, 16}}) {
        Tensor x = unit_rows(generator, rows, dim), y = unit_rows(generator, rows, dim);
        std::vector<double> graded;  // from {0, 0.5, 1}: ties included (a tie is no pair)
        for (int64_t i = 0; i < rows; ++i) graded.push_back(0.5 * static_cast<double>(generator.next_index(3)));
        for (Tensor label : {values_of(graded), generator.uniform({rows}, Dtype::Float64, 0.0, 5.0)}) {
            for (double scale : {1.0, 20.0, 45.0}) {
                CAPTURE(rows);
                CAPTURE(scale);
                check_finite_differences(cosent_of(label, scale), {x, y});
                // The composition's log(1 + sum) loses a small sum's digits (no log1p among the
                // Var ops), so it is held to the hand backward where the loss is not tiny.
                if (scale <= 20.0) check_same_at(cosent_of(label, scale), composed_cosent_of(label, scale), {x, y});
                check_close_to(evaluate(cosent_of(label, scale), {x, y}).loss.item(),
                               naive_cosent(x, y, label, scale), 1e-12);
            }
        }
    }
}

TEST_CASE("cosent: no pair with label_i < label_j gives loss log(1) = 0 and zero gradients") {
    Generator generator(62);
    Tensor x = unit_rows(generator, 5, 4), y = unit_rows(generator, 5, 4);
    // All labels equal (no ordered pair), and a batch of one row.
    for (auto [rows, label] : {std::pair<int64_t, Tensor>{5, values_of({0.7, 0.7, 0.7, 0.7, 0.7})},
                               std::pair<int64_t, Tensor>{1, values_of({3.0})}}) {
        CAPTURE(rows);
        Evaluated result = evaluate(cosent_of(label, 20.0), {slice(x, 0, 0, rows), slice(y, 0, 0, rows)});
        CHECK(result.loss.item() == 0.0);
        CHECK(result.loss.shape() == Shape{});
        check_zero_gradients(result);
        REQUIRE(result.grads[0].shape() == Shape{rows, 4});
    }
}

TEST_CASE("cosent: closed forms (one pair is a softplus; only the order of the labels matters)") {
    // N = 2, label_0 < label_1: L = log(1 + exp(s_0 - s_1)) = softplus(s_0 - s_1),
    // dL/ds_0 = sigmoid(s_0 - s_1) = -dL/ds_1.
    Tensor x = Tensor::from_vector({1, 0, 0.6, 0.8}, {2, 2}, Dtype::Float64);
    Tensor y = Tensor::from_vector({0.8, 0.6, 0, 1}, {2, 2}, Dtype::Float64);
    double scale = 5.0, s0 = scale * 0.8, s1 = scale * 0.8;  // x_0·y_0 = 0.8, x_1·y_1 = 0.8
    Evaluated result = evaluate(cosent_of(values_of({0.0, 1.0}), scale), {x, y});
    check_close_to(result.loss.item(), std::log1p(std::exp(s0 - s1)), 1e-15);  // log 2
    double slope = scale / (1 + std::exp(s1 - s0));                            // scale · sigmoid
    // dL/dx_0 = scale sigmoid y_0, dL/dx_1 = -scale sigmoid y_1
    Tensor expected_dx =
        Tensor::from_vector({slope * 0.8, slope * 0.6, -slope * 0, -slope * 1}, {2, 2}, Dtype::Float64);
    CHECK(relative_to_larger(result.grads[0], expected_dx) < 1e-15);
    // Only the order of the labels matters, not their values.
    check_same_at(cosent_of(values_of({0.0, 1.0}), scale), cosent_of(values_of({-7.0, 2.5}), scale), {x, y}, 1e-15);
}

// =======================================================================================
// Stability: tiny tau, huge scale, identical rows
// =======================================================================================

TEST_CASE("second-table losses: tau = 1e-4 and logits in the thousands stay finite and match the loops") {
    Generator generator(71);
    const int64_t rows = 8, dim = 4;
    Tensor q = unit_rows(generator, rows, dim), p = unit_rows(generator, rows, dim);
    Tensor qid = query_ids({0, 1, 0, 2, 1, 0, 3, 2});
    Tensor ga = near_rows(generator, q, 0.3), gp = near_rows(generator, p, 0.3);
    for (double tau : {1e-4, 1e-3}) {
        CAPTURE(tau);
        Evaluated inside = evaluate(multi_positive_in_of(qid, tau), {q, p, one_log_tau(tau)});
        check_all_finite(inside);
        check_close_to(inside.loss.item(), naive_multi_positive_in(q, p, qid, tau), 1e-12);
        Evaluated relaxed = evaluate(relaxed_hard_negative_of(qid, tau, 0.3), {q, p});
        check_all_finite(relaxed);
        check_close_to(relaxed.loss.item(), naive_relaxed_hard_negative(q, p, qid, tau, 0.3), 1e-12);
        // log_softmax and cross_entropy are stable themselves: the compositions are references here too.
        check_same_at(relaxed_hard_negative_of(qid, tau, 0.3), composed_relaxed_hard_negative_of(qid, tau, 0.3),
                      {q, p});
        for (bool relative : {false, true}) {
            Evaluated guided = evaluate(gist_of(ga, gp, tau, 0.05, relative), {q, p});
            check_all_finite(guided);
            check_close_to(guided.loss.item(), naive_gist(q, p, ga, gp, tau, 0.05, relative), 1e-12);
            check_same_at(gist_of(ga, gp, tau, 0.05, relative), composed_gist_of(ga, gp, tau, 0.05, relative), {q, p});
        }
    }
}

TEST_CASE("cosent: scale 1e4 (differences in the thousands) stays finite and matches the loops") {
    Generator generator(72);
    Tensor x = unit_rows(generator, 6, 4), y = unit_rows(generator, 6, 4);
    Tensor label = values_of({0.0, 1.0, 2.0, 1.0, 0.5, 3.0});
    for (double scale : {1e3, 1e4}) {
        CAPTURE(scale);
        Evaluated result = evaluate(cosent_of(label, scale), {x, y});
        check_all_finite(result);
        check_close_to(result.loss.item(), naive_cosent(x, y, label, scale), 1e-12);
        // The gradient has the scale of `scale`; finite differences still agree.
        check_finite_differences(cosent_of(label, scale), {x, y});
    }
    // A tiny sum: every pair well ordered by a wide margin, L = log1p(tiny) kept to full precision.
    Tensor ordered_x = Tensor::from_vector({1, 0, 0.6, 0.8}, {2, 2}, Dtype::Float64);
    Tensor ordered_y = Tensor::from_vector({-1, 0, 0.6, 0.8}, {2, 2}, Dtype::Float64);  // s = (-20, 20)
    double tiny = evaluate(cosent_of(values_of({0.0, 1.0}), 20.0), {ordered_x, ordered_y}).loss.item();
    CHECK(std::abs(tiny - std::log1p(std::exp(-40.0L))) < 1e-14 * std::exp(-40.0L));  // relative to the tiny value
    CHECK(tiny > 0.0);
}

TEST_CASE("second-table softmax losses: identical rows give closed forms and dL/dq = 0") {
    // Every logit equals c: softmax_j(l_i) = 1/N.
    const int64_t rows = 6;
    Tensor q = repeated_row({0.6, 0.0, 0.8}, rows), p = repeated_row({0.0, 0.6, 0.8}, rows);
    Tensor qid = query_ids({0, 0, 1, 1, 1, 2});
    // multi_positive_in: -log( (1/|G|) |G| / N ) = log N.
    Evaluated inside = evaluate(multi_positive_in_of(qid, 0.05), {q, p, one_log_tau(0.05)});
    check_close_to(inside.loss.item(), std::log(6.0), 1e-13);
    CHECK(max_abs(inside.grads[0]) < 1e-12);
    // relaxed_hard_negative: sum_j t_ij log t_ij + log N per row.
    Evaluated relaxed = evaluate(relaxed_hard_negative_of(qid, 0.05, 0.3), {q, p});
    long double entropy = 0;
    for (const auto& row : naive_relaxed_targets(qid, 0.3))
        for (long double t : row)
            if (t > 0) entropy += t * std::log(t);
    check_close_to(relaxed.loss.item(), entropy / rows + std::log(6.0L), 1e-13);
    CHECK(max_abs(relaxed.grads[0]) < 1e-12);
    // gist with a guide that masks nothing but the AA, PP diagonals: all 3N - 2 logits of a
    // row are equal when a = p is repeated, so L = log(3N - 2).
    Tensor guide = Tensor::from_vector({1, 0, 0, 0, 1, 0, 0, 0, 1, 0.6, 0.8, 0, 0, 0.6, 0.8, 0.8, 0, 0.6}, {rows, 3},
                                       Dtype::Float64);
    Evaluated guided = evaluate(gist_of(guide, guide, 1e-4, 0.0, false), {q, q});
    check_all_finite(guided);
    check_close_to(guided.loss.item(), std::log(3.0 * rows - 2), 1e-12);
}

TEST_CASE("second-table losses: float32 agrees with float64") {
    Generator generator(73);
    const int64_t rows = 6, dim = 8;
    Tensor q = unit_rows(generator, rows, dim), p = near_rows(generator, q, 0.8), n = unit_rows(generator, rows, dim);
    Tensor qid = query_ids({0, 1, 0, 1, 2, 0});
    Tensor ga = near_rows(generator, q, 0.3), gp = near_rows(generator, p, 0.3);
    Tensor label = values_of({0.1, 0.5, -0.3, 1.0, 0.5, 0.2});
    struct Case {
        const char* name;
        LossOf loss_of;
        std::vector<Tensor> inputs;
    };
    std::vector<Case> cases = {
        {"multi_positive_in", multi_positive_in_of(qid, 0.1), {q, p, one_log_tau(0.1)}},
        {"relaxed_hard_negative", relaxed_hard_negative_of(qid, 0.1, 0.2), {q, p}},
        {"gist", gist_of(ga, gp, 0.05, 0.05, false), {q, p}},
        {"margin_mse", margin_mse_of(label), {q, p, n}},
        {"cosent", cosent_of(label, 20.0), {q, p}}};
    for (const Case& c : cases) {
        const std::string case_name = c.name;
        CAPTURE(case_name);
        // gist: the mask is chosen in float32 from float32 guides; they must not flip near a threshold here.
        LossOf narrow_loss = std::string(c.name) == "gist"
                                 ? LossOf([&](const std::vector<Var>& x) {
                                       return losses::gist(x[0], x[1], Var(ga.to(Dtype::Float32)),
                                                           Var(gp.to(Dtype::Float32)), 0.05, 0.05);
                                   })
                                 : c.loss_of;
        std::vector<Tensor> narrow_inputs;
        for (const Tensor& input : c.inputs) narrow_inputs.push_back(input.to(Dtype::Float32));
        Evaluated wide = evaluate(c.loss_of, c.inputs), narrow = evaluate(narrow_loss, narrow_inputs);
        CHECK(narrow.loss.dtype() == Dtype::Float32);
        // A loss is a difference of logits (up to 1/tau = 20 here) and log-sum-exps, so float32
        // leaves an absolute error of a few u32 * 20, not a relative one: gist's loss is 0.0017
        // and float32 moves it by 5e-8. The bound is relative for losses above 1, absolute below.
        const double wide_loss = wide.loss.item();
        CHECK(std::abs(narrow.loss.to(Dtype::Float64).item() - wide_loss) < 1e-5 * std::max(1.0, std::abs(wide_loss)));
        for (size_t k = 0; k < c.inputs.size(); ++k) {
            CHECK(narrow.grads[k].dtype() == Dtype::Float32);
            CHECK(relative_to_larger(narrow.grads[k].to(Dtype::Float64), wide.grads[k]) < 1e-4);
        }
    }
}

// =======================================================================================
// Bad inputs: one line naming the input or parameter
// =======================================================================================

TEST_CASE("second-table losses: bad inputs are errors that name the input or parameter") {
    Generator generator(81);
    Var q(unit_rows(generator, 4, 3)), p(unit_rows(generator, 4, 3)), n(unit_rows(generator, 4, 3));
    Var wide(unit_rows(generator, 4, 5));
    Var one_q(unit_rows(generator, 1, 3)), one_p(unit_rows(generator, 1, 3));
    Tensor qid = query_ids({0, 1, 0, 2}), label = values_of({0.1, 0.2, 0.3, 0.4});
    Tensor with_nan = q.value().clone();
    with_nan.data<double>()[2] = std::nan("");

    SUBCASE("multi_positive_in") {
        CHECK_ERROR_MENTIONS(losses::multi_positive_in(q, p, query_ids({0, 1, 0}), Var()),
                             "qid must be a vector of length 4");
        CHECK_ERROR_MENTIONS(losses::multi_positive_in(one_q, one_p, query_ids({0}), Var()), "N (rows of q");
        CHECK_ERROR_MENTIONS(losses::multi_positive_in(q, wide, qid, Var()), "q [4, 3] and p [4, 5]");
        CHECK_ERROR_MENTIONS(losses::multi_positive_in(Var(with_nan), p, qid, Var()), "q contains NaN");
        CHECK_ERROR_MENTIONS(losses::multi_positive_in(q, p, qid, Var(), 0.0), "parameter tau");
        Var two_log_taus = Var::parameter(Tensor::full({2}, -2.0, Dtype::Float64));
        CHECK_ERROR_MENTIONS(losses::multi_positive_in(q, p, qid, two_log_taus), "log_tau must have one element");
        CHECK_ERROR_MENTIONS(losses::multi_positive_in(q, Var(p.value().to(Dtype::Float32)), qid, Var()), "same dtype");
    }
    SUBCASE("relaxed_hard_negative") {
        CHECK_ERROR_MENTIONS(losses::relaxed_hard_negative(q, p, qid, 0.1, 1.0), "parameter p_relax");
        CHECK_ERROR_MENTIONS(losses::relaxed_hard_negative(q, p, qid, 0.1, -0.1), "0 <= p_relax < 1");
        CHECK_ERROR_MENTIONS(losses::relaxed_hard_negative(q, p, qid, -1.0), "parameter tau");
        CHECK_ERROR_MENTIONS(losses::relaxed_hard_negative(one_q, one_p, query_ids({0})), ">= 2");
        CHECK_ERROR_MENTIONS(losses::relaxed_hard_negative(q, p, query_ids({0, 1})), "qid");
        CHECK_ERROR_MENTIONS(losses::relaxed_hard_negative(q, wide, qid), "same shape");
    }
    SUBCASE("gist") {
        CHECK_ERROR_MENTIONS(losses::gist(q, p, q, p, 0.01, -0.5), "parameter margin");
        CHECK_ERROR_MENTIONS(losses::gist(q, p, q, p, 0.0), "parameter tau");
        CHECK_ERROR_MENTIONS(losses::parse_gist_strategy("foo"), "strategy must be absolute or relative");
        CHECK_ERROR_MENTIONS(losses::gist(one_q, one_p, one_q, one_p), ">= 2");
        CHECK_ERROR_MENTIONS(losses::gist(q, wide, q, p), "a [4, 3] and p [4, 5]");
        CHECK_ERROR_MENTIONS(losses::gist(q, p, q, wide), "ga [4, 3] and gp [4, 5]");
        Var three_rows(unit_rows(generator, 3, 3));
        CHECK_ERROR_MENTIONS(losses::gist(q, p, three_rows, three_rows), "ga [3, 3] must have one row per row of a");
        CHECK_ERROR_MENTIONS(losses::gist(q, p, Var(with_nan), p), "ga contains NaN");
        CHECK_ERROR_MENTIONS(losses::gist(q, p, Var(q.value().to(Dtype::Float32)), Var(p.value().to(Dtype::Float32))),
                             "same dtype");
    }
    SUBCASE("margin_mse") {
        CHECK_ERROR_MENTIONS(losses::margin_mse(q, p, wide, label), "q [4, 3] and n [4, 5]");
        CHECK_ERROR_MENTIONS(losses::margin_mse(q, p, n, values_of({0.1, 0.2})), "label must be a vector of length 4");
        CHECK_ERROR_MENTIONS(losses::margin_mse(q, p, n, values_of({0.1, 0.2, std::nan(""), 0.3})),
                             "label contains NaN");
        CHECK_ERROR_MENTIONS(losses::margin_mse(Var(q.value().reshape({12})), p, n, label), "q must be a matrix");
        CHECK(all_finite(losses::margin_mse(one_q, one_p, one_p, values_of({0.5})).value()));  // N = 1 is valid
    }
    SUBCASE("cosent") {
        CHECK_ERROR_MENTIONS(losses::cosent(q, p, label, 0.0), "parameter scale");
        CHECK_ERROR_MENTIONS(losses::cosent(q, p, label, -3.0), "parameter scale");
        CHECK_ERROR_MENTIONS(losses::cosent(q, wide, label), "x [4, 3] and y [4, 5]");
        CHECK_ERROR_MENTIONS(losses::cosent(q, p, values_of({1, 2, 3})), "label must be a vector of length 4");
        CHECK_ERROR_MENTIONS(losses::cosent(Var(with_nan), p, label), "x contains NaN");
        CHECK(all_finite(losses::cosent(one_q, one_p, values_of({0.5})).value()));  // N = 1 is valid
    }
}

// =======================================================================================
// The registry-facing definitions
// =======================================================================================

TEST_CASE("second-table losses: definitions take the spec's inputs and defaults and match the loops") {
    Generator generator(91);
    SUBCASE("multi_positive_in") {
        losses::LossDefinition definition = losses::multi_positive_in_definition();
        std::map<std::string, Tensor> example = definition.example(generator, 6, 4);
        Var learnable = definition.compute(losses::make_arguments(definition, example, {{"tau", "0.3"}}));
        check_close_to(learnable.value().item(),
                       naive_multi_positive_in(example["q"], example["p"], example["qid"], 0.1), 1e-12);
        example.erase("log_tau");
        Var fixed = definition.compute(losses::make_arguments(definition, example, {{"tau", "0.3"}}));
        check_close_to(fixed.value().item(), naive_multi_positive_in(example["q"], example["p"], example["qid"], 0.3),
                       1e-12);
    }
    SUBCASE("relaxed_hard_negative") {
        losses::LossDefinition definition = losses::relaxed_hard_negative_definition();
        std::map<std::string, Tensor> example = definition.example(generator, 6, 4);
        Var loss = definition.compute(losses::make_arguments(definition, example, {{"p_relax", "0.4"}}));
        check_close_to(loss.value().item(),
                       naive_relaxed_hard_negative(example["q"], example["p"], example["qid"], 0.1, 0.4), 1e-12);
        CHECK_ERROR_MENTIONS(losses::make_arguments(definition, example, {{"p_relax", "1"}}), "p_relax");
    }
    SUBCASE("gist") {
        losses::LossDefinition definition = losses::gist_definition();
        std::map<std::string, Tensor> example = definition.example(generator, 6, 4);
        for (auto [margin, strategy] : {std::pair<const char*, const char*>{"0.0", "absolute"}, {"0.2", "relative"}}) {
            Var loss = definition.compute(
                losses::make_arguments(definition, example, {{"margin", margin}, {"strategy", strategy}}));
            check_close_to(loss.value().item(),
                           naive_gist(example["a"], example["p"], example["ga"], example["gp"], 0.01, std::stod(margin),
                                      std::string(strategy) == "relative"),
                           1e-12);
        }
        CHECK_ERROR_MENTIONS(losses::make_arguments(definition, example, {{"strategy", "foo"}}), "strategy");
        // The example masks something at the defaults (rows 0 and 1 share a guide anchor).
        std::vector<bool> row = naive_gist_kept(example["ga"], example["gp"], 0, 0.0, false);
        CHECK_FALSE(row[6 + 1]);  // AA entry (0, 1)
    }
    SUBCASE("margin_mse") {
        losses::LossDefinition definition = losses::margin_mse_definition();
        std::map<std::string, Tensor> example = definition.example(generator, 6, 4);
        Var loss = definition.compute(losses::make_arguments(definition, example, {}));
        check_close_to(loss.value().item(),
                       naive_margin_mse(example["q"], example["p"], example["n"], example["label"]), 1e-12);
        CHECK(definition.params.empty());
    }
    SUBCASE("cosent") {
        losses::LossDefinition definition = losses::cosent_definition();
        std::map<std::string, Tensor> example = definition.example(generator, 6, 4);
        Var loss = definition.compute(losses::make_arguments(definition, example, {{"scale", "7.5"}}));
        check_close_to(loss.value().item(), naive_cosent(example["x"], example["y"], example["label"], 7.5), 1e-12);
        Var defaults = definition.compute(losses::make_arguments(definition, example, {}));
        check_close_to(defaults.value().item(), naive_cosent(example["x"], example["y"], example["label"], 20.0),
                       1e-12);
    }
}

TEST_CASE("second-table losses: the grouped examples always hold a real group (the relaxed branch runs)") {
    for (uint64_t seed = 1; seed <= 20; ++seed) {
        Generator generator(seed);
        for (int64_t rows : {2, 3, 6}) {
            for (const char* name : {"multi_positive_in", "relaxed_hard_negative"}) {
                std::vector<int64_t> ids = losses::find_loss(name).example(generator, rows, 4).at("qid").to_indices();
                std::sort(ids.begin(), ids.end());
                CHECK(std::adjacent_find(ids.begin(), ids.end()) != ids.end());
            }
        }
    }
}

}  // namespace grouped_table2_tests

}  // namespace nce
