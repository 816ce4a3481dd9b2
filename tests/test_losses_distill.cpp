// distill_kl, the spec's distillation loss (docs/losses_contract.md, table 3):
//   s_ik = q_i·c_ik / tau,  t_ik = softmax_k(teacher_ik / teacher_tau),
//   L = (1/N) sum_ik t_ik ( log t_ik - log softmax_k(s_i)_k ),  0·log 0 = 0.
// Its hand backward is proved three ways in float64: (1) against central finite differences
// (gradcheck); (2) against the same formula composed from the engine's Var ops and
// differentiated by autograd; (3) against naive long-double loops of the spec's formula and of
// the closed form dL/ds = (P - t) / N (docs/derivations/distill_kl.md). Then the 0·log 0 cases
// (a -inf teacher score, a teacher so peaked that t underflows), K = 1, closed forms,
// stability at extreme inputs, float32, one-line errors and the registry's definition.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "losses/losses.h"
#include "losses/random_inputs.h"
#include "tests/loss_test_helpers.h"
#include "tests/test_helpers.h"

using namespace nce;
using namespace nce::losses;

using testing::scaled_error;

namespace distill_tests {

using Real = long double;
using testing::evaluate_loss;
using testing::LossAndGrads;
using testing::LossFunction;
constexpr double kInfinity = std::numeric_limits<double>::infinity();

// ---- helpers ---------------------------------------------------------------------------

bool all_finite(const LossAndGrads& result) {
    bool finite = nce::all_finite(result.loss);
    for (const Tensor& grad : result.grads) finite = finite && nce::all_finite(grad);
    return finite;
}

// Central finite differences agree with the hand backward on q and c (gradcheck's float64
// tolerance, 1e-6 relative to the gradient's scale).
void check_finite_differences(const LossFunction& f, const std::vector<Tensor>& inputs, double eps) {
    GradcheckOptions options;
    options.eps = eps;
    GradcheckResult result = gradcheck(f, inputs, options);
    CAPTURE(result.max_rel_error);
    CHECK(result.passed);
}

// ---- naive references: long-double loops written from the spec's table ----------------

// Log-softmax of each row of K values, shifted by the row max; a -inf entry gives -inf.
std::vector<Real> naive_log_softmax_rows(const std::vector<Real>& x, int64_t K) {
    std::vector<Real> out(x.size());
    for (size_t row = 0; row < x.size(); row += static_cast<size_t>(K)) {
        Real top = *std::max_element(x.begin() + row, x.begin() + row + K), total = 0;
        for (int64_t k = 0; k < K; ++k) total += std::exp(x[row + k] - top);
        for (int64_t k = 0; k < K; ++k) out[row + k] = x[row + k] - top - std::log(total);
    }
    return out;
}

// log t_ik = log softmax_k(teacher_ik / teacher_tau), the division in long double.
std::vector<Real> naive_log_teacher(const Tensor& teacher, double teacher_tau) {
    std::vector<Real> scaled;
    for (double score : teacher.to(Dtype::Float64).to_vector()) scaled.push_back(static_cast<Real>(score) / teacher_tau);
    return naive_log_softmax_rows(scaled, teacher.size(1));
}

// log P_ik = log softmax_k(q_i·c_ik / tau).
std::vector<Real> naive_log_student(const Tensor& q, const Tensor& c, double tau) {
    int64_t N = c.size(0), K = c.size(1), d = c.size(2);
    std::vector<double> query = q.to(Dtype::Float64).to_vector(), candidates = c.to(Dtype::Float64).to_vector();
    std::vector<Real> s(static_cast<size_t>(N * K), 0);
    for (int64_t i = 0; i < N; ++i)
        for (int64_t k = 0; k < K; ++k) {
            for (int64_t j = 0; j < d; ++j)
                s[i * K + k] += static_cast<Real>(query[i * d + j]) * candidates[(i * K + k) * d + j];
            s[i * K + k] /= tau;
        }
    return naive_log_softmax_rows(s, K);
}

// L = (1/N) sum_ik t_ik (log t_ik - log P_ik), skipping t_ik = 0 (0·log 0 = 0).
Real naive_distill_kl(const Tensor& q, const Tensor& c, const Tensor& teacher, double tau, double teacher_tau) {
    std::vector<Real> log_t = naive_log_teacher(teacher, teacher_tau), log_P = naive_log_student(q, c, tau);
    Real total = 0;
    for (size_t at = 0; at < log_t.size(); ++at) {
        Real t = std::exp(log_t[at]);
        if (t > 0) total += t * (log_t[at] - log_P[at]);
    }
    return total / c.size(0);
}

// The closed form in loops: G_ik = (P_ik - t_ik) / N, dL/dq_i = sum_k G_ik c_ik / tau,
// dL/dc_ik = G_ik q_i / tau.
std::vector<Tensor> naive_distill_kl_gradients(const Tensor& q, const Tensor& c, const Tensor& teacher, double tau,
                                               double teacher_tau) {
    int64_t N = c.size(0), K = c.size(1), d = c.size(2);
    std::vector<Real> log_t = naive_log_teacher(teacher, teacher_tau), log_P = naive_log_student(q, c, tau);
    std::vector<double> query = q.to_vector(), candidates = c.to_vector();
    std::vector<double> dq(query.size(), 0.0), dc(candidates.size(), 0.0);
    for (int64_t i = 0; i < N; ++i) {
        std::vector<Real> dq_i(static_cast<size_t>(d), 0);
        for (int64_t k = 0; k < K; ++k) {
            Real G = (std::exp(log_P[i * K + k]) - std::exp(log_t[i * K + k])) / N;
            for (int64_t j = 0; j < d; ++j) {
                dq_i[j] += G * candidates[(i * K + k) * d + j] / tau;
                dc[(i * K + k) * d + j] = static_cast<double>(G * query[i * d + j] / tau);
            }
        }
        for (int64_t j = 0; j < d; ++j) dq[i * d + j] = static_cast<double>(dq_i[j]);
    }
    return {Tensor::from_vector(dq, q.shape(), Dtype::Float64), Tensor::from_vector(dc, c.shape(), Dtype::Float64)};
}

// The same loss from Var ops, differentiated by autograd: logits by broadcasting and summing,
// the teacher's t and log t (data; log t set to 0 where t = 0) from the loops above.
Var composed_distill_kl(const Var& q, const Var& c, const Tensor& teacher, double tau, double teacher_tau) {
    int64_t N = c.size(0), K = c.size(1), d = c.size(2);
    Var s = sum(reshape(q, {N, 1, d}) * c, 2) / tau;  // [N, K]
    std::vector<double> t_values, log_t_values;
    for (Real log_t : naive_log_teacher(teacher, teacher_tau)) {
        Real t = std::exp(log_t);
        t_values.push_back(static_cast<double>(t));
        log_t_values.push_back(t > 0 ? static_cast<double>(log_t) : 0.0);
    }
    Var t(Tensor::from_vector(t_values, {N, K}, q.dtype()));
    Var log_t(Tensor::from_vector(log_t_values, {N, K}, q.dtype()));
    return sum(t * (log_t - log_softmax(s))) / static_cast<double>(N);
}

LossFunction hand_distill_kl(const Tensor& teacher, double tau, double teacher_tau) {
    return [=](const std::vector<Var>& x) { return distill_kl(x[0], x[1], teacher, tau, teacher_tau); };
}
LossFunction composed_distill_kl(const Tensor& teacher, double tau, double teacher_tau) {
    return [=](const std::vector<Var>& x) { return composed_distill_kl(x[0], x[1], teacher, tau, teacher_tau); };
}

struct Problem {
    Tensor q, c, teacher;
};

// Unit rows q [N, d] and c [N, K, d]; teacher scores uniform in [low, high).
Problem distill_problem(Generator& generator, int64_t N, int64_t K, int64_t d, double low = -2.0, double high = 4.0) {
    return {random_unit_rows(generator, N, d), random_unit_rows(generator, N * K, d).reshape({N, K, d}),
            generator.uniform({N, K}, Dtype::Float64, low, high)};
}

// teacher with entry (i, k) set to `value`.
Tensor with_score(const Tensor& teacher, int64_t i, int64_t k, double value) {
    Tensor changed = teacher.clone();
    changed.data<double>()[i * teacher.size(1) + k] = value;
    return changed;
}

// L when t is one-hot at column top(i): the cross-entropy (1/N) sum_i -log P_i,top(i).
Real naive_cross_entropy(const Tensor& q, const Tensor& c, double tau, const std::vector<int64_t>& top) {
    std::vector<Real> log_P = naive_log_student(q, c, tau);
    int64_t N = c.size(0), K = c.size(1);
    Real total = 0;
    for (int64_t i = 0; i < N; ++i) total -= log_P[i * K + top[i]];
    return total / N;
}

// ---- proofs ----------------------------------------------------------------------------

TEST_CASE("distill_kl: hand backward equals finite differences, composition and naive loops") {
    Generator generator(801);
    struct Size {
        int64_t N, K, d;
    };
    for (Size size : {Size{1, 2, 3}, Size{3, 4, 5}, Size{6, 7, 8}}) {
        // With a -inf teacher score (t = 0 there) or without. Only where K >= 3, so that t keeps two
        // candidates: with one left, t is one-hot, and at tau = 0.05 P can be one-hot too; the
        // gradient P - t is then below the rounding noise of the loss, so no difference quotient
        // can check it (the 0·log 0 test case checks that case against the loops instead).
        for (bool ruled_out : {false, true}) {
            if (ruled_out && size.K < 3) continue;
            for (double tau : {0.05, 0.5, 1.0}) {
                for (double teacher_tau : {0.5, 1.0, 3.0}) {
                    CAPTURE(size.N);
                    CAPTURE(size.K);
                    CAPTURE(ruled_out);
                    CAPTURE(tau);
                    CAPTURE(teacher_tau);
                    Problem problem = distill_problem(generator, size.N, size.K, size.d);
                    Tensor teacher = ruled_out ? with_score(problem.teacher, size.N - 1, 0, -kInfinity) : problem.teacher;
                    std::vector<Tensor> inputs{problem.q, problem.c};
                    // With tau = 0.05 the logits reach 20 and P can be nearly one-hot; the difference
                    // step is widened to 1e-5 to stay above the loss's rounding noise (as for listwise).
                    check_finite_differences(hand_distill_kl(teacher, tau, teacher_tau), inputs, 1e-5);
                    LossAndGrads hand = evaluate_loss(hand_distill_kl(teacher, tau, teacher_tau), inputs);
                    LossAndGrads composed = evaluate_loss(composed_distill_kl(teacher, tau, teacher_tau), inputs);
                    CHECK(hand.loss.rank() == 0);  // a scalar
                    CHECK(scaled_error(hand.loss, composed.loss) < 1e-12);
                    CHECK(scaled_error(hand.grads[0], composed.grads[0]) < 1e-12);
                    CHECK(scaled_error(hand.grads[1], composed.grads[1]) < 1e-12);
                    CHECK(scaled_error(hand.loss.item(),
                                         naive_distill_kl(problem.q, problem.c, teacher, tau, teacher_tau)) < 1e-12);
                    std::vector<Tensor> closed_form =
                        naive_distill_kl_gradients(problem.q, problem.c, teacher, tau, teacher_tau);
                    CHECK(scaled_error(hand.grads[0], closed_form[0]) < 1e-12);
                    CHECK(scaled_error(hand.grads[1], closed_form[1]) < 1e-12);
                }
            }
        }
    }
}

TEST_CASE("distill_kl: K = 1 gives L = 0 and zero gradients (both distributions are the one candidate)") {
    Generator generator(802);
    for (int64_t N : {1, 4}) {
        Problem problem = distill_problem(generator, N, 1, 5);
        LossAndGrads result = evaluate_loss(hand_distill_kl(problem.teacher * 100.0, 0.05, 1.0), {problem.q, problem.c});
        CHECK(result.loss.item() == 0.0);
        CHECK(max_abs(result.grads[0]) == 0.0);
        CHECK(max_abs(result.grads[1]) == 0.0);
    }
}

TEST_CASE("distill_kl: closed forms (uniform teacher; P = t gives 0; shifts and teacher_tau; listwise)") {
    Generator generator(803);
    int64_t N = 4, K = 5, d = 6;
    double tau = 0.3;
    Problem problem = distill_problem(generator, N, K, d);
    std::vector<Tensor> inputs{problem.q, problem.c};
    // Equal teacher scores in a row give t = 1/K, so L = (1/N) sum_i [ -log K - (1/K) sum_k log P_ik ].
    for (double constant : {2.5, 0.0, -1.5}) {
        CAPTURE(constant);
        Tensor uniform = Tensor::full({N, K}, constant, Dtype::Float64);
        Real expected = 0;
        for (Real log_P : naive_log_student(problem.q, problem.c, tau))
            expected += (-std::log(static_cast<Real>(K)) - log_P) / (N * K);
        CHECK(scaled_error(evaluate_loss(hand_distill_kl(uniform, tau, 1.0), inputs).loss.item(), expected) < 1e-12);
    }
    // q = 0 makes every logit 0, so P is uniform; with a uniform teacher P = t: L = 0, and every
    // gradient, (P - t)/N times something, is 0.
    Tensor zero_query = Tensor::zeros({N, d}, Dtype::Float64);
    LossAndGrads matched = evaluate_loss(hand_distill_kl(Tensor::full({N, K}, 1.0, Dtype::Float64), tau, 1.0),
                                    {zero_query, problem.c});
    CHECK(std::fabs(matched.loss.item()) < 1e-15);
    CHECK(max_abs(matched.grads[0]) < 1e-15);
    CHECK(max_abs(matched.grads[1]) < 1e-15);
    // A KL divergence is >= 0.
    CHECK(evaluate_loss(hand_distill_kl(problem.teacher, tau, 1.0), inputs).loss.item() >= 0.0);
    // Softmax ignores a shift: adding a constant to a row of teacher scores changes nothing.
    Tensor shifted = problem.teacher + Tensor::from_vector({3.0, -7.0, 100.0, 0.5}, {N, 1}, Dtype::Float64);
    LossAndGrads base = evaluate_loss(hand_distill_kl(problem.teacher, tau, 2.0), inputs);
    LossAndGrads moved = evaluate_loss(hand_distill_kl(shifted, tau, 2.0), inputs);
    CHECK(scaled_error(moved.loss, base.loss) < 1e-13);
    CHECK(scaled_error(moved.grads[0], base.grads[0]) < 1e-13);
    // teacher_tau divides the scores: (teacher, teacher_tau = 2) is (teacher / 2, teacher_tau = 1).
    LossAndGrads divided = evaluate_loss(hand_distill_kl(problem.teacher / 2.0, tau, 1.0), inputs);
    CHECK(scaled_error(divided.loss, base.loss) < 1e-13);
    CHECK(scaled_error(divided.grads[1], base.grads[1]) < 1e-13);
    // listwise is this loss with teacher_tau = tau when every row's top score is <= 0 (its
    // scores are then used as they are): two losses written apart agree, gradients included.
    Tensor nonpositive = generator.uniform({N, K}, Dtype::Float64, -3.0, -0.1);
    LossAndGrads ours = evaluate_loss(hand_distill_kl(nonpositive, tau, tau), inputs);
    LossAndGrads theirs = evaluate_loss(
        [&](const std::vector<Var>& x) { return listwise(x[0], x[1], nonpositive, tau); }, inputs);
    CHECK(scaled_error(ours.loss, theirs.loss) < 1e-12);
    CHECK(scaled_error(ours.grads[0], theirs.grads[0]) < 1e-12);
    CHECK(scaled_error(ours.grads[1], theirs.grads[1]) < 1e-12);
}

TEST_CASE("distill_kl: 0·log 0 = 0, from a -inf teacher score and from a teacher so peaked that t underflows") {
    Generator generator(804);
    int64_t N = 3, K = 4, d = 5;
    double tau = 0.2;
    Problem problem = distill_problem(generator, N, K, d);
    std::vector<Tensor> inputs{problem.q, problem.c};

    // -inf rules a candidate out: t = 0 there. The loss is finite and equals the loops that skip
    // the t = 0 terms; that candidate's gradient is P_ik/N q_i/tau (t_ik = 0), still pushing it down.
    Tensor ruled_out = with_score(with_score(problem.teacher, 0, 1, -kInfinity), 2, 3, -kInfinity);
    ruled_out = with_score(ruled_out, 2, 0, -kInfinity);  // row 2: two of four candidates ruled out
    LossAndGrads masked = evaluate_loss(hand_distill_kl(ruled_out, tau, 1.0), inputs);
    REQUIRE(all_finite(masked));
    CHECK(scaled_error(masked.loss.item(), naive_distill_kl(problem.q, problem.c, ruled_out, tau, 1.0)) < 1e-12);
    std::vector<Tensor> closed_form = naive_distill_kl_gradients(problem.q, problem.c, ruled_out, tau, 1.0);
    CHECK(scaled_error(masked.grads[0], closed_form[0]) < 1e-12);
    CHECK(scaled_error(masked.grads[1], closed_form[1]) < 1e-12);
    check_finite_differences(hand_distill_kl(ruled_out, tau, 1.0), inputs, 1e-6);
    // A finite score 10^4 below the rest gives t = exp(-10^4) = 0 in float64 too: the same loss.
    Tensor far_below = with_score(with_score(with_score(problem.teacher, 0, 1, -1e4), 2, 3, -1e4), 2, 0, -1e4);
    LossAndGrads underflow = evaluate_loss(hand_distill_kl(far_below, tau, 1.0), inputs);
    CHECK(scaled_error(underflow.loss, masked.loss) < 1e-15);
    CHECK(scaled_error(underflow.grads[1], masked.grads[1]) < 1e-15);

    // A teacher so peaked that t is one-hot in float64 (scores 1000 apart, or a teacher_tau of
    // 1e-300): t log t is 1·0 at the top and 0·log 0 elsewhere, so L is the cross-entropy
    // (1/N) sum_i -log P_i,top(i), and dL/ds = (P - onehot)/N.
    std::vector<int64_t> top{2, 0, 3};
    Tensor peaked = Tensor::zeros({N, K}, Dtype::Float64);
    for (int64_t i = 0; i < N; ++i) peaked = with_score(peaked, i, top[i], 1000.0);
    Real cross_entropy = naive_cross_entropy(problem.q, problem.c, tau, top);
    struct Case {
        const char* what;
        Tensor teacher;
        double teacher_tau;
    };
    for (const Case& c : {Case{"scores 1000 apart", peaked, 1.0}, Case{"teacher_tau 1e-300", peaked * 1e-3, 1e-300},
                          Case{"scores 1e300 over teacher_tau 1e-10 (no overflow)", peaked * 1e297, 1e-10}}) {
        CAPTURE(c.what);
        LossAndGrads result = evaluate_loss(hand_distill_kl(c.teacher, tau, c.teacher_tau), inputs);
        REQUIRE(all_finite(result));
        CHECK(scaled_error(result.loss.item(), cross_entropy) < 1e-12);
        std::vector<Tensor> expected = naive_distill_kl_gradients(problem.q, problem.c, peaked, tau, 1.0);
        CHECK(scaled_error(result.grads[0], expected[0]) < 1e-12);
        CHECK(scaled_error(result.grads[1], expected[1]) < 1e-12);
    }
}

TEST_CASE("distill_kl: stable for tau = 1e-4, logits in the thousands, huge teacher scores, identical candidates") {
    Generator generator(805);
    int64_t N = 3, K = 5, d = 4;
    Problem problem = distill_problem(generator, N, K, d);
    struct Case {
        const char* what;
        double tau, teacher_tau, embedding_scale, score_scale;
    };
    for (Case c : {Case{"tau 1e-4", 1e-4, 1.0, 1.0, 1.0}, Case{"logits in the thousands", 1.0, 1.0, 50.0, 1.0},
                   Case{"huge teacher scores", 0.05, 1.0, 1.0, 1e6},
                   Case{"teacher_tau 1e-4", 0.05, 1e-4, 1.0, 1.0},
                   Case{"everything at once", 1e-4, 1e-4, 30.0, 1e8}}) {
        CAPTURE(c.what);
        Tensor q = problem.q * c.embedding_scale;
        Tensor teacher = problem.teacher * c.score_scale;
        LossAndGrads result = evaluate_loss(hand_distill_kl(teacher, c.tau, c.teacher_tau), {q, problem.c});
        REQUIRE(all_finite(result));
        CHECK(scaled_error(result.loss.item(), naive_distill_kl(q, problem.c, teacher, c.tau, c.teacher_tau)) < 1e-9);
        std::vector<Tensor> expected = naive_distill_kl_gradients(q, problem.c, teacher, c.tau, c.teacher_tau);
        CHECK(scaled_error(result.grads[0], expected[0]) < 1e-9);
        CHECK(scaled_error(result.grads[1], expected[1]) < 1e-9);
    }
    // Identical candidates: P is uniform whatever q is; L = KL(t || uniform), finite.
    Tensor row = random_unit_rows(generator, 1, d);
    Tensor same = concat(std::vector<Tensor>(static_cast<size_t>(N * K), row), 0).reshape({N, K, d});
    LossAndGrads result = evaluate_loss(hand_distill_kl(problem.teacher, 1e-4, 1.0), {problem.q, same});
    CHECK(all_finite(result));
    CHECK(scaled_error(result.loss.item(), naive_distill_kl(problem.q, same, problem.teacher, 1e-4, 1.0)) < 1e-12);
}

TEST_CASE("distill_kl: float32 gives float32 results that agree with float64") {
    Generator generator(806);
    Problem problem = distill_problem(generator, 4, 5, 6);
    for (const Tensor& teacher : {problem.teacher, with_score(problem.teacher, 1, 2, -kInfinity)}) {
        for (double tau : {0.05, 0.5}) {
            CAPTURE(tau);
            LossAndGrads f64 = evaluate_loss(hand_distill_kl(teacher, tau, 1.0), {problem.q, problem.c});
            LossAndGrads f32 = evaluate_loss(hand_distill_kl(teacher.to(Dtype::Float32), tau, 1.0),
                                        {problem.q.to(Dtype::Float32), problem.c.to(Dtype::Float32)});
            CHECK(f32.loss.dtype() == Dtype::Float32);
            CHECK(scaled_error(f32.loss.to(Dtype::Float64), f64.loss) < 1e-5);
            for (size_t k = 0; k < 2; ++k) {
                CHECK(f32.grads[k].dtype() == Dtype::Float32);
                CHECK(scaled_error(f32.grads[k].to(Dtype::Float64), f64.grads[k]) < 1e-4);
            }
        }
    }
    // A float64 teacher with float32 embeddings: the target is data and is taken as given.
    LossAndGrads mixed = evaluate_loss(hand_distill_kl(problem.teacher, 0.5, 1.0),
                                  {problem.q.to(Dtype::Float32), problem.c.to(Dtype::Float32)});
    CHECK(mixed.loss.dtype() == Dtype::Float32);
    CHECK(all_finite(mixed));
}

TEST_CASE("distill_kl: bad inputs throw one line naming the input or parameter") {
    Generator generator(807);
    Problem problem = distill_problem(generator, 3, 4, 5);
    Var q(problem.q), c(problem.c);
    const Tensor& teacher = problem.teacher;
    // shapes
    CHECK_ERROR_MENTIONS(distill_kl(q, Var(random_unit_rows(generator, 12, 5)), teacher),
                         "c must have shape [N, K, d] = [3, K, 5] to match q [3, 5], got [12, 5]");
    CHECK_ERROR_MENTIONS(distill_kl(q, Var(problem.c.reshape({4, 3, 5})), teacher), "[3, K, 5]");
    CHECK_ERROR_MENTIONS(distill_kl(q, Var(random_unit_rows(generator, 12, 4).reshape({3, 4, 4})), teacher),
                         "got [3, 4, 4]");
    CHECK_ERROR_MENTIONS(distill_kl(q, Var(Tensor::zeros({3, 0, 5}, Dtype::Float64)), Tensor::zeros({3, 0}, Dtype::Float64)),
                         "K (candidates per query, axis 1 of c) >= 1");
    CHECK_ERROR_MENTIONS(distill_kl(q, c, Tensor::zeros({3, 5}, Dtype::Float64)),
                         "teacher must have shape [N, K] = [3, 4]");
    CHECK_ERROR_MENTIONS(distill_kl(q, c, Tensor::zeros({4, 3}, Dtype::Float64)), "got [4, 3]");
    CHECK_ERROR_MENTIONS(distill_kl(q, c, Tensor::zeros({12}, Dtype::Float64)), "teacher must have shape [N, K]");
    CHECK_ERROR_MENTIONS(distill_kl(Var(problem.q.reshape({15})), c, teacher), "q must be a matrix");
    CHECK_ERROR_MENTIONS(distill_kl(Var(Tensor::zeros({0, 5}, Dtype::Float64)), Var(Tensor::zeros({0, 4, 5}, Dtype::Float64)),
                                    Tensor::zeros({0, 4}, Dtype::Float64)),
                         "N (rows of q) >= 1");
    CHECK_ERROR_MENTIONS(distill_kl(q, Var(), teacher), "input c is missing");
    CHECK_ERROR_MENTIONS(distill_kl(q, c, Tensor()), "input teacher is missing");
    // dtypes
    CHECK_ERROR_MENTIONS(distill_kl(q, Var(problem.c.to(Dtype::Float32)), teacher), "c (float32) must have q's dtype");
    CHECK_ERROR_MENTIONS(distill_kl(q, c, Tensor::from_indices({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {3, 4})),
                         "teacher must be float32 or float64");
    // values: NaN or Inf in the embeddings; NaN, +inf, or a row of only -inf in the teacher
    Tensor bad_c = problem.c.clone();
    bad_c.data<double>()[7] = kInfinity;
    CHECK_ERROR_MENTIONS(distill_kl(q, Var(bad_c), teacher), "c contains NaN or Inf");
    CHECK_ERROR_MENTIONS(distill_kl(q, c, with_score(teacher, 1, 2, std::nan(""))), "teacher[1, 2] is nan");
    CHECK_ERROR_MENTIONS(distill_kl(q, c, with_score(teacher, 2, 0, kInfinity)),
                         "teacher[2, 0] is inf; a teacher score must be finite (or -inf to rule the candidate out)");
    Tensor all_ruled_out = teacher.clone();
    for (int64_t k = 0; k < 4; ++k) all_ruled_out = with_score(all_ruled_out, 1, k, -kInfinity);
    CHECK_ERROR_MENTIONS(distill_kl(q, c, all_ruled_out), "teacher row 1 is all -inf");
    // parameters
    CHECK_ERROR_MENTIONS(distill_kl(q, c, teacher, 0.0), "parameter tau must be > 0, got 0");
    CHECK_ERROR_MENTIONS(distill_kl(q, c, teacher, -1.0), "parameter tau must be > 0");
    CHECK_ERROR_MENTIONS(distill_kl(q, c, teacher, std::nan("")), "parameter tau must be > 0");
    CHECK_ERROR_MENTIONS(distill_kl(q, c, teacher, 0.05, 0.0), "parameter teacher_tau must be > 0, got 0");
    CHECK_ERROR_MENTIONS(distill_kl(q, c, teacher, 0.05, -2.0), "parameter teacher_tau must be > 0");
    CHECK_ERROR_MENTIONS(distill_kl(q, c, teacher, 0.05, kInfinity), "parameter teacher_tau must be > 0");
    // N = 1, and a row with a single finite score (t one-hot there), are valid
    Tensor one_finite = Tensor::from_vector({-kInfinity, 0.5, -kInfinity, -kInfinity}, {1, 4}, Dtype::Float64);
    Var one = distill_kl(Var(slice(problem.q, 0, 0, 1)), Var(slice(problem.c, 0, 0, 1)), one_finite);
    CHECK(nce::all_finite(one.value()));
    CHECK(scaled_error(one.value().item(), naive_distill_kl(slice(problem.q, 0, 0, 1), slice(problem.c, 0, 0, 1),
                                                               one_finite, 0.05, 1.0)) < 1e-12);
}

TEST_CASE("distill_kl: the definition takes the spec's inputs and defaults; compute equals the typed function") {
    LossDefinition definition = distill_kl_definition();
    CHECK(definition.name == "distill_kl");
    REQUIRE(definition.inputs.size() == 3);
    CHECK(definition.inputs[0].name == "q");
    CHECK(definition.inputs[0].kind == InputKind::Embedding);
    CHECK(definition.inputs[1].name == "c");
    CHECK(definition.inputs[1].kind == InputKind::Embedding);
    CHECK(definition.inputs[2].name == "teacher");
    CHECK(definition.inputs[2].kind == InputKind::Data);
    for (const InputSpec& input : definition.inputs) CHECK(input.required);
    REQUIRE(definition.params.size() == 2);
    CHECK(definition.params[0].name == "tau");
    CHECK(definition.params[0].default_value == "0.05");
    CHECK(definition.params[0].rule == ParamRule::Positive);
    CHECK(definition.params[1].name == "teacher_tau");
    CHECK(definition.params[1].default_value == "1.0");
    CHECK(definition.params[1].rule == ParamRule::Positive);

    // Through make_arguments (what `nce loss` does): the same loss and gradients as the typed
    // function; the teacher is a constant with no gradient.
    Generator generator(808);
    auto example = definition.example(generator, 5, 6);
    CHECK(example["c"].shape() == Shape{5, 4, 6});
    CHECK(example["teacher"].shape() == Shape{5, 4});
    CHECK(example["teacher"].to_vector()[3] == -kInfinity);  // the example exercises 0·log 0
    LossArguments arguments = make_arguments(definition, example, {{"tau", "0.2"}, {"teacher_tau", "0.7"}});
    Var through_registry = definition.compute(arguments);
    through_registry.backward();
    CHECK(!arguments.input("teacher").requires_grad());
    LossAndGrads typed = evaluate_loss(hand_distill_kl(example["teacher"], 0.2, 0.7), {example["q"], example["c"]});
    CHECK(through_registry.value().item() == typed.loss.item());
    CHECK(max_abs_difference(arguments.input("q").grad(), typed.grads[0]) == 0);
    CHECK(max_abs_difference(arguments.input("c").grad(), typed.grads[1]) == 0);
    CHECK(scaled_error(through_registry.value().item(),
                         naive_distill_kl(example["q"], example["c"], example["teacher"], 0.2, 0.7)) < 1e-12);
    CHECK_ERROR_MENTIONS(make_arguments(definition, example, {{"teacher_tau", "0"}}),
                         "distill_kl: parameter teacher_tau must be > 0");
    CHECK_ERROR_MENTIONS(make_arguments(definition, example, {{"temperature", "1"}}),
                         "distill_kl takes: tau, teacher_tau");
    example.erase("teacher");
    CHECK_ERROR_MENTIONS(make_arguments(definition, example, {}),
                         "required input teacher is missing (distill_kl takes q, c, teacher)");
}

TEST_CASE("distill_kl: the registry's gradient checks (nce gradcheck distill_kl) pass in both dtypes") {
    CheckRegistry registry;
    register_loss_checks(registry);
    int cases = 0;
    for (const CheckCase& check : registry.cases()) {
        if (check.op != "distill_kl") continue;
        ++cases;
        CHECK(check.constant_inputs == std::vector<int>{2});  // the teacher
        for (Dtype dtype : testing::kFloatDtypes) {
            for (uint64_t seed : {1, 2, 3}) {
                INFO(check.description << " " << dtype_name(dtype) << " seed " << seed);
                CHECK(run_check(check, dtype, seed).passed);
            }
        }
    }
    CHECK(cases == 2);
}

}  // namespace distill_tests
