// The pairwise and regression losses: triplet, listwise, contrastive, smooth_l1.
// Each hand-derived backward is proved three ways, in float64: (1) against central finite
// differences (gradcheck), (2) against the same formula composed from the engine's Var ops
// and differentiated by autograd (loss and every gradient equal to ~1e-12), (3) against the
// closed forms of docs/derivations/. Forward values are checked against naive long-double
// loops written here. Then: stability at extreme inputs, and one-line errors for bad ones.
#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "losses/losses.h"
#include "losses/random_inputs.h"
#include "tests/loss_test_helpers.h"
#include "tests/test_helpers.h"

using namespace nce;
using namespace nce::losses;

using testing::relative_error;

namespace pairwise_tests {

using Real = long double;
using testing::evaluate_loss;
using testing::LossAndGrads;
using testing::LossFunction;

// ---- helpers ---------------------------------------------------------------------------

// The hand backward and the composition agree on the loss and on every gradient.
void check_matches_composition(const LossFunction& hand, const LossFunction& composed,
                               const std::vector<Tensor>& inputs, double tolerance = 1e-12) {
    LossAndGrads h = evaluate_loss(hand, inputs), c = evaluate_loss(composed, inputs);
    CHECK(h.loss.shape() == Shape{});
    CHECK(relative_error(h.loss, c.loss) <= tolerance);
    for (size_t i = 0; i < inputs.size(); ++i) {
        CAPTURE(i);
        REQUIRE(h.grads[i].defined());
        REQUIRE(c.grads[i].defined());
        CHECK(relative_error(h.grads[i], c.grads[i]) <= tolerance);
    }
}

// Central finite differences agree with the hand backward for every input (gradcheck's
// float64 tolerance: 1e-6 relative to the gradient's scale). eps = 0 is gradcheck's 1e-6.
void check_finite_differences(const LossFunction& f, const std::vector<Tensor>& inputs, double eps = 0) {
    GradcheckOptions options;
    options.eps = eps;
    GradcheckResult result = gradcheck(f, inputs, options);
    CAPTURE(result.max_rel_error);
    CHECK(result.passed);
}

bool all_grads_finite(const LossAndGrads& result) {
    bool finite = all_finite(result.loss);
    for (const Tensor& grad : result.grads) finite = finite && all_finite(grad);
    return finite;
}

// Euclidean length of each row, keeping the axis: x [N, d] -> [N, 1].
Tensor row_lengths(const Tensor& x) { return sqrt(sum(square(x), 1, /*keepdim=*/true)); }

Tensor matrix(const std::vector<double>& values, int64_t rows, int64_t columns) {
    return Tensor::from_vector(values, {rows, columns}, Dtype::Float64);
}

// ---- triplet ---------------------------------------------------------------------------

// Naive reference: L = (1/N) sum_i relu(h_i), with plain loops in long double.
Real naive_triplet(const Tensor& a, const Tensor& p, const Tensor& n, double margin, TripletMetric metric) {
    int64_t N = a.size(0), d = a.size(1);
    std::vector<double> A = a.to_vector(), P = p.to_vector(), M = n.to_vector();
    Real total = 0;
    for (int64_t i = 0; i < N; ++i) {
        Real to_negative = 0, to_positive = 0;
        for (int64_t k = 0; k < d; ++k) {
            Real ai = A[i * d + k], pi = P[i * d + k], ni = M[i * d + k];
            if (metric == TripletMetric::Dot) {
                to_negative += ai * ni;
                to_positive += ai * pi;
            } else {
                to_positive += (ai - pi) * (ai - pi);
                to_negative += (ai - ni) * (ai - ni);
            }
        }
        Real hinge = metric == TripletMetric::Dot ? to_negative - to_positive + margin
                                                  : std::sqrt(to_positive) - std::sqrt(to_negative) + margin;
        total += std::max<Real>(hinge, 0);
    }
    return total / N;
}

// The same loss from Var ops, differentiated by autograd.
Var composed_triplet(const Var& a, const Var& p, const Var& n, double margin, TripletMetric metric) {
    Var hinge = metric == TripletMetric::Dot
                    ? sum(a * n, 1) - sum(a * p, 1) + margin
                    : sqrt(sum((a - p) * (a - p), 1)) - sqrt(sum((a - n) * (a - n), 1)) + margin;
    return mean(relu(hinge));
}

// Unit rows a, p, n, each triplet redrawn until its hinge is at least 0.05 from the relu's
// kink and both distances are at least 0.1 (finite differences need a smooth neighbourhood).
std::vector<Tensor> triplet_problem(Generator& generator, int64_t N, int64_t d, double margin, TripletMetric metric) {
    std::vector<Tensor> a, p, n;
    for (int64_t i = 0; i < N; ++i) {
        Tensor ai, pi, ni;
        for (int attempt = 0;; ++attempt) {
            REQUIRE(attempt < 1000);
            ai = random_unit_rows(generator, 1, d), pi = random_unit_rows(generator, 1, d);
            ni = random_unit_rows(generator, 1, d);
            double dist_ap = row_lengths(ai - pi).item(), dist_an = row_lengths(ai - ni).item();
            double hinge = metric == TripletMetric::Dot ? sum(ai * ni).item() - sum(ai * pi).item() + margin
                                                        : dist_ap - dist_an + margin;
            if (std::fabs(hinge) > 0.05 && dist_ap > 0.1 && dist_an > 0.1) break;
        }
        a.push_back(ai), p.push_back(pi), n.push_back(ni);
    }
    return {concat(a, 0), concat(p, 0), concat(n, 0)};
}

LossFunction hand_triplet(double margin, TripletMetric metric) {
    return [=](const std::vector<Var>& x) { return triplet(x[0], x[1], x[2], margin, metric); };
}
LossFunction composed_triplet(double margin, TripletMetric metric) {
    return [=](const std::vector<Var>& x) { return composed_triplet(x[0], x[1], x[2], margin, metric); };
}

TEST_CASE("triplet: hand backward equals finite differences, composition and naive forward") {
    Generator generator(101);
    for (TripletMetric metric : {TripletMetric::Dot, TripletMetric::Euclidean}) {
        for (auto [N, d] : {std::pair<int64_t, int64_t>{1, 3}, {4, 5}, {9, 16}}) {
            for (double margin : {0.0, 0.3, 1.0}) {
                CAPTURE(static_cast<int>(metric));
                CAPTURE(N);
                CAPTURE(d);
                CAPTURE(margin);
                std::vector<Tensor> inputs = triplet_problem(generator, N, d, margin, metric);
                check_finite_differences(hand_triplet(margin, metric), inputs);
                check_matches_composition(hand_triplet(margin, metric), composed_triplet(margin, metric), inputs);
                Var loss = triplet(Var(inputs[0]), Var(inputs[1]), Var(inputs[2]), margin, metric);
                CHECK(relative_error(loss.value().item(),
                                     naive_triplet(inputs[0], inputs[1], inputs[2], margin, metric)) < 1e-13);
            }
        }
    }
}

TEST_CASE("triplet: closed forms (all hinges active, none active, a zero distance)") {
    Generator generator(102);
    int64_t N = 6, d = 8;
    Tensor a = random_unit_rows(generator, N, d), p = random_unit_rows(generator, N, d);
    Tensor n = random_unit_rows(generator, N, d);

    // dot, margin 3 > 2 >= |a·n - a·p| for unit rows: every hinge is active, so
    // dL/da = (n - p)/N, dL/dp = -a/N, dL/dn = a/N.
    LossAndGrads active = evaluate_loss(hand_triplet(3.0, TripletMetric::Dot), {a, p, n});
    CHECK(relative_error(active.grads[0], (n - p) / static_cast<double>(N)) < 1e-14);
    CHECK(relative_error(active.grads[1], -a / static_cast<double>(N)) < 1e-14);
    CHECK(relative_error(active.grads[2], a / static_cast<double>(N)) < 1e-14);

    // p = a and n = -a: a·n - a·p = -2 (dot) and |a-p| - |a-n| = -2 (euclidean); with
    // margin 1 no hinge is active: L = 0 and every gradient is 0.
    for (TripletMetric metric : {TripletMetric::Dot, TripletMetric::Euclidean}) {
        LossAndGrads none = evaluate_loss(hand_triplet(1.0, metric), {a, a, -a});
        CHECK(none.loss.item() == 0.0);
        for (const Tensor& grad : none.grads) CHECK(max_abs(grad) == 0.0);
    }

    // euclidean with p = a: |a - p| = 0 takes the subgradient 0, so p gets no gradient and
    // the hinge margin - |a - n| pulls only through u_an = (a - n)/|a - n|.
    LossAndGrads corner = evaluate_loss(hand_triplet(3.0, TripletMetric::Euclidean), {a, a, n});
    Tensor u_an = (a - n) / row_lengths(a - n);
    CHECK(all_grads_finite(corner));
    CHECK(relative_error(corner.grads[0], -u_an / static_cast<double>(N)) < 1e-14);
    CHECK(max_abs(corner.grads[1]) == 0.0);
    CHECK(relative_error(corner.grads[2], u_an / static_cast<double>(N)) < 1e-14);
}

TEST_CASE("triplet: finite on identical rows and large embeddings") {
    Generator generator(103);
    Tensor row = random_unit_rows(generator, 1, 5);
    Tensor same = concat({row, row, row}, 0);  // [3, 5], identical rows
    for (TripletMetric metric : {TripletMetric::Dot, TripletMetric::Euclidean}) {
        // a = p = n: every hinge equals the margin, L = margin.
        LossAndGrads result = evaluate_loss(hand_triplet(0.3, metric), {same, same, same});
        CHECK(all_grads_finite(result));
        CHECK(relative_error(result.loss.item(), 0.3L) < 1e-15);
        // Embeddings of size 1000: dot products in the millions.
        std::vector<Tensor> big = triplet_problem(generator, 5, 4, 0.3, metric);
        for (Tensor& x : big) x = x * 1000.0;
        CHECK(all_grads_finite(evaluate_loss(hand_triplet(0.3, metric), big)));
        check_matches_composition(hand_triplet(0.3, metric), composed_triplet(0.3, metric), big);
    }
    // euclidean with all three rows identical: both distances are 0, no NaN, gradient 0.
    LossAndGrads corner = evaluate_loss(hand_triplet(0.3, TripletMetric::Euclidean), {same, same, same});
    for (const Tensor& grad : corner.grads) CHECK(max_abs(grad) == 0.0);
}

TEST_CASE("triplet: bad inputs throw one line naming the input or parameter") {
    Generator generator(104);
    Var a(random_unit_rows(generator, 3, 4)), p(random_unit_rows(generator, 3, 4));
    Var n(random_unit_rows(generator, 3, 4));
    CHECK_ERROR_MENTIONS(triplet(a, Var(random_unit_rows(generator, 2, 4)), n), "p [2, 4]");
    CHECK_ERROR_MENTIONS(triplet(a, p, Var(random_unit_rows(generator, 3, 5))), "n [3, 5]");
    CHECK_ERROR_MENTIONS(triplet(Var(Tensor::zeros({3}, Dtype::Float64)), p, n), "a must be a matrix");
    CHECK_ERROR_MENTIONS(triplet(a, p, Var(n.value().to(Dtype::Float32))), "same dtype");
    Tensor with_nan = n.value().clone();
    with_nan.data<double>()[5] = std::nan("");
    CHECK_ERROR_MENTIONS(triplet(a, p, Var(with_nan)), "n contains NaN");
    CHECK_ERROR_MENTIONS(triplet(a, p, n, -0.1), "margin must be >= 0");
    CHECK_ERROR_MENTIONS(parse_triplet_metric("manhattan"), "metric must be dot or euclidean, got 'manhattan'");
    CHECK(parse_triplet_metric("euclidean") == TripletMetric::Euclidean);
}

// ---- listwise --------------------------------------------------------------------------

// Log-softmax of each row of K values, shifted by the row max, in long double.   [rows * K]
std::vector<Real> naive_log_softmax_rows(const std::vector<Real>& x, int64_t K) {
    std::vector<Real> out(x.size());
    for (size_t row = 0; row < x.size(); row += static_cast<size_t>(K)) {
        Real top = *std::max_element(x.begin() + row, x.begin() + row + K), total = 0;
        for (int64_t k = 0; k < K; ++k) total += std::exp(x[row + k] - top);
        for (int64_t k = 0; k < K; ++k) out[row + k] = x[row + k] - top - std::log(total);
    }
    return out;
}

std::vector<Real> exp_of(const std::vector<Real>& x) {
    std::vector<Real> out;
    for (Real v : x) out.push_back(std::exp(v));
    return out;
}

// log t_qk = log softmax_k(sh_qk / tau), sh = score / max_k score when that max is > 0.
std::vector<Real> naive_listwise_log_target(const Tensor& score, double tau) {
    int64_t Q = score.size(0), K = score.size(1);
    std::vector<double> S = score.to_vector();
    std::vector<Real> logits(S.size());
    for (int64_t q = 0; q < Q; ++q) {
        Real row_max = *std::max_element(S.begin() + q * K, S.begin() + (q + 1) * K);
        for (int64_t k = 0; k < K; ++k) logits[q * K + k] = (row_max > 0 ? S[q * K + k] / row_max : S[q * K + k]) / tau;
    }
    return naive_log_softmax_rows(logits, K);
}
std::vector<Real> naive_listwise_target(const Tensor& score, double tau) {
    return exp_of(naive_listwise_log_target(score, tau));
}

// log pr_qk = log softmax_k(q_q·a_qk / tau).
std::vector<Real> naive_listwise_log_probabilities(const Tensor& q, const Tensor& a, double tau) {
    int64_t Q = a.size(0), K = a.size(1), d = a.size(2);
    std::vector<double> query = q.to_vector(), candidates = a.to_vector();
    std::vector<Real> logits(static_cast<size_t>(Q * K), 0);
    for (int64_t i = 0; i < Q; ++i)
        for (int64_t k = 0; k < K; ++k) {
            for (int64_t j = 0; j < d; ++j)
                logits[i * K + k] += static_cast<Real>(query[i * d + j]) * candidates[(i * K + k) * d + j];
            logits[i * K + k] /= tau;
        }
    return naive_log_softmax_rows(logits, K);
}

// L = (1/Q) sum_qk t_qk (log t_qk - log pr_qk).
Real naive_listwise(const Tensor& q, const Tensor& a, const Tensor& score, double tau) {
    std::vector<Real> log_t = naive_listwise_log_target(score, tau);
    std::vector<Real> log_pr = naive_listwise_log_probabilities(q, a, tau);
    Real total = 0;
    for (size_t i = 0; i < log_t.size(); ++i) total += std::exp(log_t[i]) * (log_t[i] - log_pr[i]);
    return total / a.size(0);
}

// The gradient closed form in loops: dL/dq_q = sum_k (pr_qk - t_qk)/Q a_qk/tau,
// dL/da_qk = (pr_qk - t_qk)/Q q_q/tau.
std::vector<Tensor> naive_listwise_gradients(const Tensor& q, const Tensor& a, const Tensor& score, double tau) {
    int64_t Q = a.size(0), K = a.size(1), d = a.size(2);
    std::vector<Real> target = naive_listwise_target(score, tau);
    std::vector<Real> pr = exp_of(naive_listwise_log_probabilities(q, a, tau));
    std::vector<double> query = q.to_vector(), candidates = a.to_vector();
    std::vector<double> dq(query.size(), 0.0), da(candidates.size(), 0.0);
    for (int64_t i = 0; i < Q; ++i)
        for (int64_t k = 0; k < K; ++k) {
            Real dlogit = (pr[i * K + k] - target[i * K + k]) / Q / tau;
            for (int64_t j = 0; j < d; ++j) {
                dq[i * d + j] += static_cast<double>(dlogit * candidates[(i * K + k) * d + j]);
                da[(i * K + k) * d + j] = static_cast<double>(dlogit * query[i * d + j]);
            }
        }
    return {Tensor::from_vector(dq, q.shape(), Dtype::Float64), Tensor::from_vector(da, a.shape(), Dtype::Float64)};
}

// The same loss from Var ops: logits by broadcasting and summing, the target t (data) from
// the naive loops above.
Var composed_listwise(const Var& q, const Var& a, const Tensor& score, double tau) {
    int64_t Q = a.size(0), K = a.size(1), d = a.size(2);
    Var logits = sum(reshape(q, {Q, 1, d}) * a, 2) / tau;  // [Q, K]
    std::vector<double> target_values, log_target_values;
    for (Real t : naive_listwise_target(score, tau)) {
        target_values.push_back(static_cast<double>(t));
        log_target_values.push_back(static_cast<double>(std::log(t)));
    }
    Var target(Tensor::from_vector(target_values, {Q, K}, q.dtype()));
    Var log_target(Tensor::from_vector(log_target_values, {Q, K}, q.dtype()));
    return sum(target * (log_target - log_softmax(logits))) / static_cast<double>(Q);
}

LossFunction hand_listwise(const Tensor& score, double tau) {
    return [=](const std::vector<Var>& x) { return listwise(x[0], x[1], score, tau); };
}
LossFunction composed_listwise(const Tensor& score, double tau) {
    return [=](const std::vector<Var>& x) { return composed_listwise(x[0], x[1], score, tau); };
}

struct ListwiseProblem {
    Tensor q, a, score;
};

ListwiseProblem listwise_problem(Generator& generator, int64_t Q, int64_t K, int64_t d, double score_low,
                                 double score_high) {
    return {random_unit_rows(generator, Q, d), random_unit_rows(generator, Q * K, d).reshape({Q, K, d}),
            generator.uniform({Q, K}, Dtype::Float64, score_low, score_high)};
}

TEST_CASE("listwise: hand backward equals finite differences, composition and naive forward") {
    Generator generator(201);
    struct Size {
        int64_t Q, K, d;
    };
    for (Size size : {Size{1, 2, 3}, Size{3, 4, 5}, Size{6, 7, 8}}) {
        // positive scores (divided by the row max), and scores of both signs (some rows with
        // a max <= 0 are used as they are).
        for (auto [low, high] : {std::pair{0.0, 3.0}, std::pair{-2.0, 0.5}}) {
            for (double tau : {0.05, 0.5, 1.0, 2.0}) {
                CAPTURE(size.Q);
                CAPTURE(size.K);
                CAPTURE(low);
                CAPTURE(tau);
                ListwiseProblem problem = listwise_problem(generator, size.Q, size.K, size.d, low, high);
                std::vector<Tensor> inputs{problem.q, problem.a};
                // With tau = 0.05 the logits reach 20 and pr and t can both be nearly one-hot:
                // the loss's rounding noise (~1e-15 · 20) then sits close to its small gradient,
                // so the difference step is widened to 1e-5 to stay above the noise.
                check_finite_differences(hand_listwise(problem.score, tau), inputs, 1e-5);
                check_matches_composition(hand_listwise(problem.score, tau), composed_listwise(problem.score, tau),
                                          inputs);
                Var loss = listwise(Var(problem.q), Var(problem.a), problem.score, tau);
                CHECK(relative_error(loss.value().item(), naive_listwise(problem.q, problem.a, problem.score, tau)) <
                      1e-12);
            }
        }
    }
}

TEST_CASE("listwise: closed forms (uniform scores give a uniform target; scale invariance; pr = t)") {
    Generator generator(202);
    int64_t Q = 4, K = 5, d = 6;
    double tau = 0.7;
    ListwiseProblem problem = listwise_problem(generator, Q, K, d, 0.0, 1.0);
    // Equal scores in a row (positive, zero or negative) give t = 1/K, so
    // L = (1/Q) sum_q [ -log K - (1/K) sum_k log pr_qk ] and dL/dlogits = (pr - 1/K)/Q.
    for (double constant : {2.5, 0.0, -1.5}) {
        CAPTURE(constant);
        Tensor uniform = Tensor::full({Q, K}, constant, Dtype::Float64);
        for (Real t : naive_listwise_target(uniform, tau))
            CHECK(relative_error(static_cast<double>(t), 1.0L / K) < 1e-15);
        Real expected = 0;
        for (Real log_pr : naive_listwise_log_probabilities(problem.q, problem.a, tau))
            expected += (-std::log(static_cast<Real>(K)) - log_pr) / (Q * K);
        LossAndGrads result = evaluate_loss(hand_listwise(uniform, tau), {problem.q, problem.a});
        CHECK(relative_error(result.loss.item(), expected) < 1e-12);
        std::vector<Tensor> expected_grads = naive_listwise_gradients(problem.q, problem.a, uniform, tau);
        CHECK(relative_error(result.grads[0], expected_grads[0]) < 1e-12);
        CHECK(relative_error(result.grads[1], expected_grads[1]) < 1e-12);
    }
    // Positive scores are divided by their row max: scaling a row by 5 changes nothing.
    Var loss = listwise(Var(problem.q), Var(problem.a), problem.score, tau);
    Var scaled = listwise(Var(problem.q), Var(problem.a), problem.score * 5.0, tau);
    CHECK(relative_error(scaled.value().item(), static_cast<Real>(loss.value().item())) < 1e-14);
    // q = 0 makes every logit 0, so pr is uniform; with uniform targets pr = t: L = 0 and
    // every gradient (pr - t)/Q · ... is 0.
    Tensor zero_query = Tensor::zeros({Q, d}, Dtype::Float64);
    LossAndGrads matched = evaluate_loss(hand_listwise(Tensor::full({Q, K}, 1.0, Dtype::Float64), tau),
                                    {zero_query, problem.a});
    CHECK(std::fabs(matched.loss.item()) < 1e-15);
    CHECK(max_abs(matched.grads[0]) < 1e-15);
    CHECK(max_abs(matched.grads[1]) < 1e-15);
}

TEST_CASE("listwise: stable for tau = 1e-4, huge scores, logits in the thousands and identical candidates") {
    Generator generator(203);
    int64_t Q = 3, K = 5, d = 4;
    ListwiseProblem problem = listwise_problem(generator, Q, K, d, 0.0, 1.0);
    struct Case {
        const char* what;
        double tau, embedding_scale, score_scale, score_shift;
    };
    for (Case c : {Case{"tau 1e-4", 1e-4, 1.0, 1.0, 0.0}, Case{"logits in the thousands", 1.0, 50.0, 1.0, 0.0},
                   Case{"huge positive scores, tau 1e-4", 1e-4, 1.0, 1e6, 0.0},
                   Case{"huge negative scores, tau 1e-4", 1e-4, 1.0, 1e6, -2e6},
                   Case{"everything at once", 1e-4, 30.0, 1e8, -0.5e8}}) {
        CAPTURE(c.what);
        Tensor q = problem.q * c.embedding_scale;
        Tensor score = problem.score * c.score_scale + c.score_shift;
        LossAndGrads result = evaluate_loss(hand_listwise(score, c.tau), {q, problem.a});
        REQUIRE(all_grads_finite(result));
        CHECK(relative_error(result.loss.item(), naive_listwise(q, problem.a, score, c.tau)) < 1e-9);
        std::vector<Tensor> expected = naive_listwise_gradients(q, problem.a, score, c.tau);
        CHECK(relative_error(result.grads[0], expected[0]) < 1e-9);
        CHECK(relative_error(result.grads[1], expected[1]) < 1e-9);
    }
    // Identical candidates: pr is uniform whatever q is; L = KL(t || uniform), finite.
    Tensor row = random_unit_rows(generator, 1, d);
    Tensor same = concat(std::vector<Tensor>(static_cast<size_t>(Q * K), row), 0).reshape({Q, K, d});
    LossAndGrads result = evaluate_loss(hand_listwise(problem.score, 1e-4), {problem.q, same});
    CHECK(all_grads_finite(result));
    CHECK(relative_error(result.loss.item(), naive_listwise(problem.q, same, problem.score, 1e-4)) < 1e-12);
}

TEST_CASE("listwise: bad inputs throw one line naming the input or parameter") {
    Generator generator(204);
    ListwiseProblem problem = listwise_problem(generator, 3, 4, 5, 0.0, 1.0);
    Var q(problem.q), a(problem.a);
    CHECK_ERROR_MENTIONS(listwise(q, Var(random_unit_rows(generator, 12, 5)), problem.score),
                         "a must have shape [Q, K, d]");
    CHECK_ERROR_MENTIONS(listwise(q, Var(problem.a.reshape({4, 3, 5})), problem.score), "[3, K, 5]");
    CHECK_ERROR_MENTIONS(listwise(q, Var(random_unit_rows(generator, 3, 5).reshape({3, 1, 5})),
                                  Tensor::zeros({3, 1}, Dtype::Float64)),
                         "K (candidates per query, axis 1 of a) >= 2");
    CHECK_ERROR_MENTIONS(listwise(q, a, Tensor::zeros({3, 5}, Dtype::Float64)),
                         "score must have shape [Q, K] = [3, 4]");
    Tensor bad_score = problem.score.clone();
    bad_score.data<double>()[2] = std::nan("");
    CHECK_ERROR_MENTIONS(listwise(q, a, bad_score), "score contains NaN");
    Tensor bad_a = problem.a.clone();
    bad_a.data<double>()[7] = INFINITY;
    CHECK_ERROR_MENTIONS(listwise(q, Var(bad_a), problem.score), "a contains NaN or Inf");
    CHECK_ERROR_MENTIONS(listwise(q, a, problem.score, 0.0), "tau must be > 0");
    CHECK_ERROR_MENTIONS(listwise(q, a, problem.score, -1.0), "tau must be > 0");
    CHECK_ERROR_MENTIONS(listwise(q, Var(problem.a.to(Dtype::Float32)), problem.score), "dtype");
}

// ---- contrastive -----------------------------------------------------------------------

// L = (1/N) sum_i 1/2 [ label_i D_i^2 + (1 - label_i) relu(margin - D_i)^2 ], in long double.
Real naive_contrastive(const Tensor& x, const Tensor& y, const Tensor& label, double margin, ContrastiveMetric metric) {
    int64_t N = x.size(0), d = x.size(1);
    std::vector<double> X = x.to_vector(), Y = y.to_vector(), labels = label.to_vector();
    Real total = 0;
    for (int64_t i = 0; i < N; ++i) {
        Real dot = 0, squared = 0;
        for (int64_t k = 0; k < d; ++k) {
            Real xk = X[i * d + k], yk = Y[i * d + k];
            dot += xk * yk;
            squared += (xk - yk) * (xk - yk);
        }
        Real distance = metric == ContrastiveMetric::Cosine ? 1 - dot : std::sqrt(squared);
        Real shortfall = std::max<Real>(margin - distance, 0);
        total += 0.5L * (labels[i] * distance * distance + (1 - labels[i]) * shortfall * shortfall);
    }
    return total / N;
}

Var composed_contrastive(const Var& x, const Var& y, const Tensor& label, double margin, ContrastiveMetric metric) {
    Var labels(label);
    Var distance = metric == ContrastiveMetric::Cosine ? 1.0 - sum(x * y, 1) : sqrt(sum((x - y) * (x - y), 1));
    Var shortfall = relu(margin - distance);
    return mean(0.5 * (labels * distance * distance + (1.0 - labels) * shortfall * shortfall));
}

LossFunction hand_contrastive(const Tensor& label, double margin, ContrastiveMetric metric) {
    return [=](const std::vector<Var>& v) { return contrastive(v[0], v[1], label, margin, metric); };
}
LossFunction composed_contrastive(const Tensor& label, double margin, ContrastiveMetric metric) {
    return [=](const std::vector<Var>& v) { return composed_contrastive(v[0], v[1], label, margin, metric); };
}

// Unit rows x, y, each pair redrawn until its euclidean distance is at least 0.1 (away from
// the corner of |x - y| at 0).
std::vector<Tensor> contrastive_problem(Generator& generator, int64_t N, int64_t d) {
    std::vector<Tensor> x, y;
    for (int64_t i = 0; i < N; ++i) {
        Tensor xi, yi;
        do {
            xi = random_unit_rows(generator, 1, d), yi = random_unit_rows(generator, 1, d);
        } while (row_lengths(xi - yi).item() < 0.1);
        x.push_back(xi), y.push_back(yi);
    }
    return {concat(x, 0), concat(y, 0)};
}

TEST_CASE("contrastive: hand backward equals finite differences, composition and naive forward") {
    Generator generator(301);
    for (ContrastiveMetric metric : {ContrastiveMetric::Cosine, ContrastiveMetric::Euclidean}) {
        for (auto [N, d] : {std::pair<int64_t, int64_t>{1, 3}, {5, 4}, {10, 16}}) {
            for (double margin : {0.0, 0.5, 1.2}) {
                CAPTURE(static_cast<int>(metric));
                CAPTURE(N);
                CAPTURE(margin);
                std::vector<Tensor> inputs = contrastive_problem(generator, N, d);
                // labels 1, 0, 0.3 (any float is allowed by the formula), 1, 0, 0.3, ...
                std::vector<double> label_values;
                for (int64_t i = 0; i < N; ++i) label_values.push_back(i % 3 == 0 ? 1.0 : i % 3 == 1 ? 0.0 : 0.3);
                Tensor label = Tensor::from_vector(label_values, {N}, Dtype::Float64);
                check_finite_differences(hand_contrastive(label, margin, metric), inputs);
                check_matches_composition(hand_contrastive(label, margin, metric),
                                          composed_contrastive(label, margin, metric), inputs);
                Var loss = contrastive(Var(inputs[0]), Var(inputs[1]), label, margin, metric);
                Real expected = naive_contrastive(inputs[0], inputs[1], label, margin, metric);
                CHECK(relative_error(loss.value().item(), expected) < 1e-13);
            }
        }
    }
}

TEST_CASE("contrastive: closed forms (similar pairs; dissimilar pairs beyond the margin)") {
    Generator generator(302);
    int64_t N = 5, d = 6;
    std::vector<Tensor> xy = contrastive_problem(generator, N, d);
    Tensor x = xy[0], y = xy[1];
    Tensor ones = Tensor::full({N}, 1.0, Dtype::Float64), zeros = Tensor::zeros({N}, Dtype::Float64);
    // euclidean, all similar: L = (1/2N) sum |x_i - y_i|^2, dL/dx = (x - y)/N, dL/dy = -(x - y)/N.
    LossAndGrads similar = evaluate_loss(hand_contrastive(ones, 0.5, ContrastiveMetric::Euclidean), {x, y});
    CHECK(relative_error(similar.loss.item(), static_cast<Real>(sum(square(x - y)).item()) / (2 * N)) < 1e-14);
    CHECK(relative_error(similar.grads[0], (x - y) / static_cast<double>(N)) < 1e-14);
    CHECK(relative_error(similar.grads[1], (y - x) / static_cast<double>(N)) < 1e-14);
    // cosine, all similar: D = 1 - x·y, dL/dx_i = -D_i y_i / N, dL/dy_i = -D_i x_i / N.
    LossAndGrads cosine = evaluate_loss(hand_contrastive(ones, 0.5, ContrastiveMetric::Cosine), {x, y});
    Tensor distance = (1.0 - sum(x * y, 1)).reshape({N, 1});
    CHECK(relative_error(cosine.grads[0], -(distance * y) / static_cast<double>(N)) < 1e-14);
    CHECK(relative_error(cosine.grads[1], -(distance * x) / static_cast<double>(N)) < 1e-14);
    // all dissimilar with margin 0: relu(0 - D) = 0 for D >= 0, so L = 0 and no gradient.
    for (ContrastiveMetric metric : {ContrastiveMetric::Cosine, ContrastiveMetric::Euclidean}) {
        LossAndGrads apart = evaluate_loss(hand_contrastive(zeros, 0.0, metric), {x, y});
        CHECK(apart.loss.item() == 0.0);
        CHECK(max_abs(apart.grads[0]) == 0.0);
        CHECK(max_abs(apart.grads[1]) == 0.0);
    }
}

TEST_CASE("contrastive: finite where x = y (D = 0) and on large embeddings") {
    Generator generator(303);
    Tensor x = random_unit_rows(generator, 4, 5);
    Tensor label = Tensor::from_vector({1, 0, 1, 0}, {4}, Dtype::Float64);
    // euclidean D = 0: the similar rows contribute 0, the dissimilar ones margin^2/2; the
    // subgradient 0 is taken, so every gradient is exactly 0, not NaN.
    LossAndGrads same = evaluate_loss(hand_contrastive(label, 0.5, ContrastiveMetric::Euclidean), {x, x});
    CHECK(all_grads_finite(same));
    CHECK(relative_error(same.loss.item(), 0.5L * 0.25L * 2 / 4) < 1e-15);
    CHECK(max_abs(same.grads[0]) == 0.0);
    CHECK(max_abs(same.grads[1]) == 0.0);
    // cosine with identical unit rows: D = 0 up to rounding, finite, matching the composition.
    check_matches_composition(hand_contrastive(label, 0.5, ContrastiveMetric::Cosine),
                              composed_contrastive(label, 0.5, ContrastiveMetric::Cosine), {x, x});
    // Embeddings of size 1000.
    std::vector<Tensor> big = contrastive_problem(generator, 4, 5);
    for (Tensor& v : big) v = v * 1000.0;
    for (ContrastiveMetric metric : {ContrastiveMetric::Cosine, ContrastiveMetric::Euclidean}) {
        CHECK(all_grads_finite(evaluate_loss(hand_contrastive(label, 0.5, metric), big)));
        check_matches_composition(hand_contrastive(label, 0.5, metric), composed_contrastive(label, 0.5, metric), big);
    }
}

TEST_CASE("contrastive: bad inputs throw one line naming the input or parameter") {
    Generator generator(304);
    Var x(random_unit_rows(generator, 3, 4)), y(random_unit_rows(generator, 3, 4));
    Tensor label = Tensor::from_vector({1, 0, 1}, {3}, Dtype::Float64);
    CHECK_ERROR_MENTIONS(contrastive(x, Var(random_unit_rows(generator, 3, 2)), label), "y [3, 2]");
    CHECK_ERROR_MENTIONS(contrastive(x, y, Tensor::from_vector({1, 0}, {2}, Dtype::Float64)),
                         "label must be a vector of length 3");
    Tensor nan_label = label.clone();
    nan_label.data<double>()[1] = std::nan("");
    CHECK_ERROR_MENTIONS(contrastive(x, y, nan_label), "label contains NaN");
    Tensor nan_x = x.value().clone();
    nan_x.data<double>()[0] = std::nan("");
    CHECK_ERROR_MENTIONS(contrastive(Var(nan_x), y, label), "x contains NaN");
    CHECK_ERROR_MENTIONS(contrastive(x, y, label, -1.0), "margin must be >= 0");
    CHECK_ERROR_MENTIONS(contrastive(x, y, Tensor()), "label is missing");
    CHECK_ERROR_MENTIONS(parse_contrastive_metric("manhattan"), "metric must be cosine or euclidean, got 'manhattan'");
    CHECK_ERROR_MENTIONS(parse_contrastive_metric("dot"), "metric must be cosine or euclidean");
}

// ---- smooth_l1 -------------------------------------------------------------------------

// h(e) = 0.5 e^2 / beta if |e| < beta else |e| - 0.5 beta, averaged over all elements.
Real naive_smooth_l1(const Tensor& pred, const Tensor& target, double beta) {
    std::vector<double> P = pred.to_vector(), T = target.to_vector();
    Real total = 0;
    for (size_t i = 0; i < P.size(); ++i) {
        Real e = static_cast<Real>(P[i]) - T[i];
        total += std::fabs(e) < beta ? 0.5L * e * e / beta : std::fabs(e) - 0.5L * beta;
    }
    return total / static_cast<Real>(P.size());
}

// The spec's two pieces, chosen per element by masks made here (constants), from Var ops:
// |e| = relu(e) + relu(-e).
Var composed_smooth_l1(const Var& pred, const Var& target, double beta) {
    Var error = pred - target;
    std::vector<double> inside_values;
    for (double e : error.value().to_vector()) inside_values.push_back(std::fabs(e) < beta ? 1.0 : 0.0);
    Var inside(Tensor::from_vector(inside_values, error.shape(), error.dtype()));
    Var size = relu(error) + relu(-error);
    return mean(inside * (0.5 / beta) * error * error + (1.0 - inside) * (size - 0.5 * beta));
}

LossFunction hand_smooth_l1(double beta) {
    return [=](const std::vector<Var>& v) { return smooth_l1(v[0], v[1], beta); };
}
LossFunction composed_smooth_l1(double beta) {
    return [=](const std::vector<Var>& v) { return composed_smooth_l1(v[0], v[1], beta); };
}

// target normal; errors with |e| in [0, 0.9 beta) or [1.1 beta, 3 beta), random signs:
// both pieces appear, none at the joint |e| = beta.
std::vector<Tensor> smooth_l1_problem(Generator& generator, int64_t N, int64_t d, double beta) {
    Tensor target = generator.normal({N, d}, Dtype::Float64);
    std::vector<double> errors(static_cast<size_t>(N * d));
    for (double& e : errors) {
        bool inside = generator.next_uniform() < 0.5;
        double size = beta * (inside ? 0.9 * generator.next_uniform() : 1.1 + 1.9 * generator.next_uniform());
        e = generator.next_uniform() < 0.5 ? -size : size;
    }
    return {target + matrix(errors, N, d), target};
}

TEST_CASE("smooth_l1: hand backward equals finite differences, composition and naive forward") {
    Generator generator(401);
    for (auto [N, d] : {std::pair<int64_t, int64_t>{1, 1}, {4, 3}, {8, 16}}) {
        for (double beta : {0.1, 1.0, 2.5}) {
            CAPTURE(N);
            CAPTURE(d);
            CAPTURE(beta);
            std::vector<Tensor> inputs = smooth_l1_problem(generator, N, d, beta);
            check_finite_differences(hand_smooth_l1(beta), inputs);
            check_matches_composition(hand_smooth_l1(beta), composed_smooth_l1(beta), inputs);
            Var loss = smooth_l1(Var(inputs[0]), Var(inputs[1]), beta);
            CHECK(relative_error(loss.value().item(), naive_smooth_l1(inputs[0], inputs[1], beta)) < 1e-13);
        }
    }
}

TEST_CASE("smooth_l1: closed forms (all inside the band; all outside; the joint)") {
    Generator generator(402);
    int64_t N = 3, d = 4;
    double beta = 2.0, elements = static_cast<double>(N * d);
    Tensor target = generator.normal({N, d}, Dtype::Float64);
    // All |e| < beta: L = mean(0.5 e^2 / beta), dL/dpred = e / (beta N d), dL/dtarget = -that.
    Tensor small = generator.uniform({N, d}, Dtype::Float64, -1.9, 1.9);
    LossAndGrads inside = evaluate_loss(hand_smooth_l1(beta), {target + small, target});
    CHECK(relative_error(inside.loss.item(), static_cast<Real>(sum(square(small)).item()) * 0.5L / beta / elements) <
          1e-13);
    CHECK(relative_error(inside.grads[0], small / (beta * elements)) < 1e-13);
    CHECK(relative_error(inside.grads[1], -small / (beta * elements)) < 1e-13);
    // All |e| > beta: L = mean(|e|) - 0.5 beta, dL/dpred = sign(e) / (N d).
    Tensor signs = matrix({1, -1, 1, 1, -1, -1, 1, -1, 1, 1, 1, -1}, N, d);
    Tensor large = signs * generator.uniform({N, d}, Dtype::Float64, 2.1, 5.0);
    LossAndGrads outside = evaluate_loss(hand_smooth_l1(beta), {target + large, target});
    CHECK(relative_error(outside.loss.item(), static_cast<Real>(mean(abs(large)).item()) - 0.5L * beta) < 1e-13);
    CHECK(relative_error(outside.grads[0], signs / elements) < 1e-13);
    CHECK(relative_error(outside.grads[1], -signs / elements) < 1e-13);
    // At |e| = beta both pieces give h = 0.5 beta and slope ±1: the loss is continuous and
    // differentiable there.
    Tensor joint = signs * beta;
    LossAndGrads at_joint = evaluate_loss(hand_smooth_l1(beta), {joint, Tensor::zeros({N, d}, Dtype::Float64)});
    CHECK(relative_error(at_joint.loss.item(), 0.5L * beta) < 1e-15);
    CHECK(relative_error(at_joint.grads[0], signs / elements) < 1e-15);
}

TEST_CASE("smooth_l1: finite for huge errors and for pred = target") {
    // e = 2e200: e^2 would overflow; the clamped form never squares it.
    Tensor pred = Tensor::full({2, 3}, 1e200, Dtype::Float64), target = Tensor::full({2, 3}, -1e200, Dtype::Float64);
    LossAndGrads huge = evaluate_loss(hand_smooth_l1(1.0), {pred, target});
    REQUIRE(all_grads_finite(huge));
    CHECK(relative_error(huge.loss.item(), naive_smooth_l1(pred, target, 1.0)) < 1e-15);
    CHECK(relative_error(huge.grads[0], Tensor::full({2, 3}, 1.0 / 6, Dtype::Float64)) < 1e-15);
    // pred = target: L = 0, gradients 0.
    Generator generator(403);
    Tensor same = generator.normal({3, 4}, Dtype::Float64);
    LossAndGrads zero = evaluate_loss(hand_smooth_l1(0.5), {same, same});
    CHECK(zero.loss.item() == 0.0);
    CHECK(max_abs(zero.grads[0]) == 0.0);
    CHECK(max_abs(zero.grads[1]) == 0.0);
}

TEST_CASE("smooth_l1: bad inputs throw one line naming the input or parameter") {
    Generator generator(404);
    Var pred(generator.normal({3, 4}, Dtype::Float64)), target(generator.normal({3, 4}, Dtype::Float64));
    CHECK_ERROR_MENTIONS(smooth_l1(pred, Var(generator.normal({4, 3}, Dtype::Float64))),
                         "pred [3, 4] and target [4, 3] must have the same shape");
    CHECK_ERROR_MENTIONS(smooth_l1(pred, target, 0.0), "beta must be > 0");
    CHECK_ERROR_MENTIONS(smooth_l1(pred, target, -1.0), "beta must be > 0");
    CHECK_ERROR_MENTIONS(smooth_l1(pred, target, NAN), "beta must be > 0");
    Tensor nan_target = target.value().clone();
    nan_target.data<double>()[3] = std::nan("");
    CHECK_ERROR_MENTIONS(smooth_l1(pred, Var(nan_target)), "target contains NaN");
    Var empty(Tensor::zeros({0, 4}, Dtype::Float64));
    CHECK_ERROR_MENTIONS(smooth_l1(empty, empty), "N (rows of pred) >= 1");
    CHECK_ERROR_MENTIONS(smooth_l1(pred, Var(target.value().to(Dtype::Float32))), "same dtype");
}

// ---- all four --------------------------------------------------------------------------

TEST_CASE("pairwise losses: float32 gives float32 results that agree with float64") {
    Generator generator(501);
    std::vector<Tensor> abc = triplet_problem(generator, 4, 6, 0.3, TripletMetric::Euclidean);
    std::vector<Tensor> xy = contrastive_problem(generator, 4, 6);
    std::vector<Tensor> pt = smooth_l1_problem(generator, 4, 6, 1.0);
    ListwiseProblem list = listwise_problem(generator, 3, 4, 6, 0.0, 2.0);
    Tensor label = Tensor::from_vector({1, 0, 1, 0}, {4}, Dtype::Float64);
    struct Case {
        const char* name;
        LossFunction f;
        std::vector<Tensor> inputs;
    };
    for (const Case& c : {Case{"triplet", hand_triplet(0.3, TripletMetric::Euclidean), abc},
                          Case{"contrastive", hand_contrastive(label, 0.5, ContrastiveMetric::Euclidean), xy},
                          Case{"smooth_l1", hand_smooth_l1(1.0), pt},
                          Case{"listwise", hand_listwise(list.score, 0.1), {list.q, list.a}}}) {
        CAPTURE(c.name);
        std::vector<Tensor> single;
        for (const Tensor& x : c.inputs) single.push_back(x.to(Dtype::Float32));
        LossAndGrads f64 = evaluate_loss(c.f, c.inputs), f32 = evaluate_loss(c.f, single);
        CHECK(f32.loss.dtype() == Dtype::Float32);
        CHECK(relative_error(f32.loss.to(Dtype::Float64), f64.loss) < 1e-5);
        for (size_t i = 0; i < f64.grads.size(); ++i) {
            CHECK(f32.grads[i].dtype() == Dtype::Float32);
            CHECK(relative_error(f32.grads[i].to(Dtype::Float64), f64.grads[i]) < 1e-4);
        }
    }
}

TEST_CASE("pairwise losses: the definitions' examples are valid problems that pass finite differences") {
    for (int64_t rows : {1, 5}) {
        Generator generator(600 + static_cast<uint64_t>(rows));
        auto triplet_example = triplet_definition().example(generator, rows, 6);
        for (TripletMetric metric : {TripletMetric::Dot, TripletMetric::Euclidean})
            check_finite_differences(hand_triplet(0.3, metric),
                                     {triplet_example["a"], triplet_example["p"], triplet_example["n"]});
        auto contrastive_example = contrastive_definition().example(generator, rows, 6);
        for (ContrastiveMetric metric : {ContrastiveMetric::Cosine, ContrastiveMetric::Euclidean})
            check_finite_differences(hand_contrastive(contrastive_example["label"], 0.5, metric),
                                     {contrastive_example["x"], contrastive_example["y"]});
        auto listwise_example = listwise_definition().example(generator, rows, 6);
        CHECK(listwise_example["a"].shape() == Shape{rows, 4, 6});
        check_finite_differences(hand_listwise(listwise_example["score"], 1.0),
                                 {listwise_example["q"], listwise_example["a"]});
        auto smooth_example = smooth_l1_definition().example(generator, rows, 6);
        check_finite_differences(hand_smooth_l1(1.0), {smooth_example["pred"], smooth_example["target"]});
    }
}

TEST_CASE("pairwise losses: compute reads inputs and text parameters; an unknown metric is rejected") {
    Generator generator(701);
    LossDefinition definition = triplet_definition();
    auto example = definition.example(generator, 4, 5);
    LossArguments arguments = make_parameters(definition, {{"margin", "0.3"}, {"metric", "euclidean"}});
    for (const auto& [name, value] : example) arguments.inputs[name] = Var::parameter(value);
    Var loss = definition.compute(arguments);
    CHECK(relative_error(loss.value().item(), naive_triplet(example["a"], example["p"], example["n"], 0.3,
                                                            TripletMetric::Euclidean)) < 1e-13);
    arguments.params["metric"] = "manhattan";
    CHECK_ERROR_MENTIONS(definition.compute(arguments), "metric must be dot or euclidean");

    LossDefinition pairs = contrastive_definition();
    auto pair_example = pairs.example(generator, 4, 5);
    LossArguments pair_arguments = make_parameters(pairs, {{"margin", "0.5"}});
    pair_arguments.inputs = {{"x", Var::parameter(pair_example["x"])},
                             {"y", Var::parameter(pair_example["y"])},
                             {"label", Var(pair_example["label"])}};
    pair_arguments.params["metric"] = "manhattan";  // past make_parameters' check: compute's own must refuse it
    CHECK_ERROR_MENTIONS(pairs.compute(pair_arguments), "metric must be cosine or euclidean");
}

}  // namespace pairwise_tests
