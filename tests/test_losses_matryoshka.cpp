// matryoshka, the spec's nested-embeddings loss (docs/losses_contract.md, table 3):
//   for each prefix size m: u, v = the first m columns of q, p, each row re-normalised to unit
//   length; L = sum_m w_m · infonce(u, v) / sum_m w_m, infonce with the same tau.
// Its hand backward is proved three ways in float64: (1) against central finite differences
// (gradcheck), q, p and log_tau; (2) against the same loss composed from the engine's Var ops
// (slice, l2_normalize) and infonce's own node, differentiated by autograd; (3) against naive
// long-double loops of the spec's formula and of the closed form
// (docs/derivations/matryoshka.md). Then closed forms (dims = d alone is infonce; the weights;
// one prefix is infonce on its re-normalised columns; a one-column prefix; scale invariance),
// the default dims, the temperature, float32, one-line errors and the registry's definition.
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "losses/losses.h"
#include "losses/worked_example.h"
#include "tests/loss_test_helpers.h"
#include "tests/test_helpers.h"

using namespace nce;
using namespace nce::losses;

using testing::scaled_error;

namespace matryoshka_tests {

using Real = long double;
using testing::evaluate_loss;
using testing::LossAndGrads;
using testing::LossFunction;
constexpr double kInfinity = std::numeric_limits<double>::infinity();

// ---- helpers ---------------------------------------------------------------------------

// Rows with entries |x| in [0.25, 1.25) and random signs, each row scaled by [0.5, 2): no
// prefix of a row is near zero, and no row has unit length (the re-normalisation shows).
Tensor random_rows(Generator& generator, int64_t rows, int64_t d) {
    Tensor magnitude = generator.uniform({rows, d}, Dtype::Float64, 0.25, 1.25);
    Tensor sign = generator.bernoulli({rows, d}, Dtype::Float64, 0.5) * 2.0 - 1.0;
    return magnitude * sign * generator.uniform({rows, 1}, Dtype::Float64, 0.5, 2.0);
}

// Each row scaled to unit length.
Tensor unit_rows(const Tensor& x) { return x / sqrt(sum(x * x, 1, true)); }

// A loss of (q, p) or (q, p, log_tau): log_tau is used when the inputs have a third tensor.
LossFunction hand_matryoshka(double tau, std::vector<int64_t> dims, std::vector<double> weights) {
    return [=](const std::vector<Var>& x) {
        return matryoshka(x[0], x[1], x.size() > 2 ? x[2] : Var(), tau, dims, weights);
    };
}

// The same loss composed from Var ops and differentiated by autograd: each prefix sliced and
// re-normalised by the engine's l2_normalize op, then infonce's own node, the weighted mean.
LossFunction composed_matryoshka(double tau, std::vector<int64_t> dims, std::vector<double> weights) {
    return [=](const std::vector<Var>& x) {
        int64_t d = x[0].size(1);
        std::vector<int64_t> sizes = dims.empty() ? matryoshka_default_dims(d) : dims;
        std::vector<double> w = weights.empty() ? std::vector<double>(sizes.size(), 1.0) : weights;
        double W = 0;
        for (double weight : w) W += weight;
        Var total;
        for (size_t k = 0; k < sizes.size(); ++k) {
            Var u = l2_normalize(slice(x[0], 1, 0, sizes[k])), v = l2_normalize(slice(x[1], 1, 0, sizes[k]));
            Var term = infonce(u, v, Var(), x.size() > 2 ? x[2] : Var(), tau) * (w[k] / W);
            total = total.defined() ? total + term : term;
        }
        return total;
    };
}

// ---- naive references: long-double loops written from the spec's table ----------------

struct Naive {
    Real loss = 0;
    std::vector<double> dq, dp;  // [N * d], row-major
    double dlog_tau = 0;         // tau · dL/dtau (the caller zeroes it where tau is clamped)
};

// L = sum_m w_m L_m / W with L_m = (1/N) sum_i ( lse_j l_ij - l_ii ), l_ij = u_i·v_j / tau,
// u_i = q_i[:m] / |q_i[:m]|, v_i = p_i[:m] / |p_i[:m]|; and the closed form of its gradient:
// G = (w_m/W)(P - I)/N, g = G v / tau, dq_i[:m] += (g_i - u_i (u_i·g_i)) / |q_i[:m]|
// (likewise p with G^T u / tau), tau dL/dtau = -sum_m sum_ij G_ij l_ij.
Naive naive_matryoshka(const Tensor& q_tensor, const Tensor& p_tensor, double tau, std::vector<int64_t> dims,
                       std::vector<double> weights) {
    int64_t N = q_tensor.size(0), d = q_tensor.size(1);
    std::vector<double> q = q_tensor.to(Dtype::Float64).to_vector(), p = p_tensor.to(Dtype::Float64).to_vector();
    if (dims.empty()) dims = matryoshka_default_dims(d);
    if (weights.empty()) weights.assign(dims.size(), 1.0);
    Real W = 0;
    for (double w : weights) W += w;
    Naive result;
    result.dq.assign(q.size(), 0.0);
    result.dp.assign(p.size(), 0.0);
    Real dlog_tau = 0;
    for (size_t k = 0; k < dims.size(); ++k) {
        int64_t m = dims[k];
        Real share = weights[k] / W;
        // the prefix rows at unit length, and their lengths
        std::vector<Real> u(N * m), v(N * m), q_length(N, 0), p_length(N, 0);
        for (int64_t i = 0; i < N; ++i) {
            for (int64_t j = 0; j < m; ++j) {
                q_length[i] += static_cast<Real>(q[i * d + j]) * q[i * d + j];
                p_length[i] += static_cast<Real>(p[i * d + j]) * p[i * d + j];
            }
            q_length[i] = std::sqrt(q_length[i]);
            p_length[i] = std::sqrt(p_length[i]);
            for (int64_t j = 0; j < m; ++j) {
                u[i * m + j] = q[i * d + j] / q_length[i];
                v[i * m + j] = p[i * d + j] / p_length[i];
            }
        }
        // logits, the loss, and G
        std::vector<Real> l(N * N), G(N * N);
        Real L_m = 0;
        for (int64_t i = 0; i < N; ++i) {
            Real top = -kInfinity;
            for (int64_t j = 0; j < N; ++j) {
                Real dot = 0;
                for (int64_t c = 0; c < m; ++c) dot += u[i * m + c] * v[j * m + c];
                l[i * N + j] = dot / tau;
                top = std::max(top, l[i * N + j]);
            }
            Real total = 0;
            for (int64_t j = 0; j < N; ++j) total += std::exp(l[i * N + j] - top);
            L_m += top + std::log(total) - l[i * N + i];
            for (int64_t j = 0; j < N; ++j)
                G[i * N + j] = share * (std::exp(l[i * N + j] - top) / total - (i == j ? 1 : 0)) / N;
        }
        result.loss += share * L_m / N;
        for (int64_t i = 0; i < N * N; ++i) dlog_tau -= G[i] * l[i];
        // g = G v / tau and h = G^T u / tau, then through the re-normalisation
        for (int64_t i = 0; i < N; ++i) {
            std::vector<Real> g(m, 0), h(m, 0);
            for (int64_t j = 0; j < N; ++j)
                for (int64_t c = 0; c < m; ++c) {
                    g[c] += G[i * N + j] * v[j * m + c] / tau;
                    h[c] += G[j * N + i] * u[j * m + c] / tau;
                }
            Real u_dot_g = 0, v_dot_h = 0;
            for (int64_t c = 0; c < m; ++c) {
                u_dot_g += u[i * m + c] * g[c];
                v_dot_h += v[i * m + c] * h[c];
            }
            for (int64_t c = 0; c < m; ++c) {
                result.dq[i * d + c] += static_cast<double>((g[c] - u[i * m + c] * u_dot_g) / q_length[i]);
                result.dp[i * d + c] += static_cast<double>((h[c] - v[i * m + c] * v_dot_h) / p_length[i]);
            }
        }
    }
    result.dlog_tau = static_cast<double>(dlog_tau);
    return result;
}

Tensor as_tensor(const std::vector<double>& values, const Shape& shape) {
    return Tensor::from_vector(values, shape, Dtype::Float64);
}

// ---- proofs ----------------------------------------------------------------------------

struct Config {
    int64_t N, d;
    std::vector<int64_t> dims;
    std::vector<double> weights;
};

const std::vector<Config>& configs() {
    static const std::vector<Config> all{
        {2, 3, {}, {}},                       // default: 3 alone
        {3, 4, {}, {}},                       // default: 1, 2, 4 (a one-column prefix)
        {4, 8, {2, 4, 8}, {1.0, 2.0, 3.0}},   // given dims and weights
        {5, 16, {}, {0.5, 1.0, 1.0, 4.0}},    // default 2, 4, 8, 16 with given weights
        {6, 6, {1, 3, 6}, {}},                // given dims, weights all 1
        {3, 5, {5}, {2.5}},                   // one prefix, the whole embedding
    };
    return all;
}

TEST_CASE("matryoshka: hand backward equals finite differences for q, p and log_tau") {
    Generator generator(901);
    for (const Config& config : configs()) {
        for (double tau : {0.05, 0.5, 1.0}) {
            CAPTURE(config.N);
            CAPTURE(config.d);
            CAPTURE(tau);
            Tensor q = random_rows(generator, config.N, config.d), p = random_rows(generator, config.N, config.d);
            // The fixed temperature, then a learnable one (tau = exp(log_tau)).
            GradcheckResult fixed = gradcheck(hand_matryoshka(tau, config.dims, config.weights), {q, p});
            CAPTURE(fixed.max_rel_error);
            CHECK(fixed.passed);
            Tensor log_tau = Tensor::scalar(std::log(tau), Dtype::Float64);
            GradcheckResult learnable =
                gradcheck(hand_matryoshka(0.05, config.dims, config.weights), {q, p, log_tau});
            CAPTURE(learnable.max_rel_error);
            CHECK(learnable.passed);
            REQUIRE(learnable.inputs.size() == 3);
            CHECK(learnable.inputs[2].max_rel_error < 1e-6);  // log_tau itself
        }
    }
    // A log_tau of shape [1], and one below the clamp (tau = 1e-4: the loss does not move with
    // log_tau there, and its gradient is 0; differences agree).
    Tensor q = random_rows(generator, 4, 8), p = random_rows(generator, 4, 8);
    CHECK(gradcheck(hand_matryoshka(0.05, {}, {}), {q, p, Tensor::full({1}, std::log(0.2), Dtype::Float64)}).passed);
    LossAndGrads clamped = evaluate_loss(hand_matryoshka(0.05, {}, {}), {q, p, Tensor::scalar(-12.0, Dtype::Float64)});
    CHECK(clamped.grads[2].item() == 0.0);
}

TEST_CASE("matryoshka: hand backward equals the autograd composition and the closed form in loops") {
    Generator generator(902);
    for (const Config& config : configs()) {
        for (bool learnable : {false, true}) {
            CAPTURE(config.N);
            CAPTURE(config.d);
            CAPTURE(learnable);
            double tau = 0.1;
            Tensor q = random_rows(generator, config.N, config.d), p = random_rows(generator, config.N, config.d);
            std::vector<Tensor> inputs{q, p};
            if (learnable) inputs.push_back(Tensor::scalar(std::log(0.3), Dtype::Float64));
            LossAndGrads hand = evaluate_loss(hand_matryoshka(tau, config.dims, config.weights), inputs);
            LossAndGrads composed = evaluate_loss(composed_matryoshka(tau, config.dims, config.weights), inputs);
            CHECK(hand.loss.rank() == 0);
            CHECK(scaled_error(hand.loss, composed.loss) < 1e-12);
            for (size_t k = 0; k < inputs.size(); ++k) CHECK(scaled_error(hand.grads[k], composed.grads[k]) < 1e-12);

            Naive naive = naive_matryoshka(q, p, learnable ? 0.3 : tau, config.dims, config.weights);
            CHECK(scaled_error(hand.loss.item(), naive.loss) < 1e-12);
            CHECK(scaled_error(hand.grads[0], as_tensor(naive.dq, q.shape())) < 1e-12);
            CHECK(scaled_error(hand.grads[1], as_tensor(naive.dp, p.shape())) < 1e-12);
            if (learnable) CHECK(scaled_error(hand.grads[2].item(), naive.dlog_tau) < 1e-12);
        }
    }
}

TEST_CASE("matryoshka: the loss equals a naive reference of the spec's formula, float64 to 1e-12, float32 to 1e-5") {
    Generator generator(903);
    for (int draw = 0; draw < 8; ++draw) {
        const Config& config = configs()[static_cast<size_t>(draw) % configs().size()];
        double tau = draw % 2 == 0 ? 0.05 : 0.2;
        CAPTURE(draw);
        Tensor q = random_rows(generator, config.N, config.d), p = random_rows(generator, config.N, config.d);
        Real reference = naive_matryoshka(q, p, tau, config.dims, config.weights).loss;
        Var f64 = matryoshka(Var(q), Var(p), Var(), tau, config.dims, config.weights);
        CHECK(f64.dtype() == Dtype::Float64);
        CHECK(scaled_error(f64.value().item(), reference) < 1e-12);
        // float32: the same inputs rounded to float32, against the reference of those values
        Tensor q32 = q.to(Dtype::Float32), p32 = p.to(Dtype::Float32);
        Var f32 = matryoshka(Var(q32), Var(p32), Var(), tau, config.dims, config.weights);
        CHECK(f32.dtype() == Dtype::Float32);
        CHECK(scaled_error(f32.value().item(), naive_matryoshka(q32, p32, tau, config.dims, config.weights).loss) <
              1e-5);
    }
}

TEST_CASE("matryoshka: dims = d alone is infonce with the same tau") {
    Generator generator(904);
    int64_t N = 5, d = 6;
    for (double tau : {0.05, 0.3}) {
        CAPTURE(tau);
        // Unit rows: the re-normalisation changes them by rounding only, so the loss is
        // infonce's to 1e-12; the gradient is infonce's projected off each row, (I - q_i q_i^T) g_i.
        Tensor q = unit_rows(random_rows(generator, N, d)), p = unit_rows(random_rows(generator, N, d));
        LossAndGrads ours = evaluate_loss(hand_matryoshka(tau, {d}, {}), {q, p});
        LossAndGrads theirs = evaluate_loss([&](const std::vector<Var>& x) { return infonce(x[0], x[1], Var(), Var(), tau); },
                                            {q, p});
        CHECK(scaled_error(ours.loss, theirs.loss) < 1e-12);
        CHECK(scaled_error(ours.grads[0], theirs.grads[0] - q * sum(q * theirs.grads[0], 1, true)) < 1e-12);
        CHECK(scaled_error(ours.grads[1], theirs.grads[1] - p * sum(p * theirs.grads[1], 1, true)) < 1e-12);
        // Rows whose re-normalisation is exact (one entry +-1, the rest 0): the same number, bit for bit.
        Tensor one_hot_q = Tensor::from_vector({1, 0, 0, 0, 0, 0, 0, -1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0,
                                                0, 0, 0, 0, -1, 0, 1, 0, 0, 0, 0, 0},
                                               {N, d}, Dtype::Float64);
        Tensor one_hot_p = Tensor::from_vector({0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, -1, 0, 0, 0,
                                                1, 0, 0, 0, 0, 0, 0, 0, 0, 0, -1, 0},
                                               {N, d}, Dtype::Float64);
        CHECK(matryoshka(Var(one_hot_q), Var(one_hot_p), Var(), tau, {d}).value().item() ==
              infonce(Var(one_hot_q), Var(one_hot_p), Var(), Var(), tau).value().item());
        // Rows of any length: infonce on the rows at unit length; the weight of a lone prefix cancels.
        Tensor x = random_rows(generator, N, d), y = random_rows(generator, N, d);
        double expected = infonce(Var(unit_rows(x)), Var(unit_rows(y)), Var(), Var(), tau).value().item();
        CHECK(scaled_error(matryoshka(Var(x), Var(y), Var(), tau, {d}).value().item(), expected) < 1e-12);
        CHECK(scaled_error(matryoshka(Var(x), Var(y), Var(), tau, {d}, {7.5}).value().item(), expected) < 1e-12);
        // The projection: each row's gradient is orthogonal to the row (L does not see its length).
        LossAndGrads lengths = evaluate_loss(hand_matryoshka(tau, {d}, {}), {x, y});
        CHECK(max_abs(sum(lengths.grads[0] * x, 1)) < 1e-13);
        CHECK(max_abs(sum(lengths.grads[1] * y, 1)) < 1e-13);
    }
}

TEST_CASE("matryoshka: each prefix is infonce on its re-normalised columns, weighted as the spec says") {
    Generator generator(905);
    int64_t N = 4, d = 8;
    double tau = 0.1;
    Tensor q = random_rows(generator, N, d), p = random_rows(generator, N, d);
    std::vector<int64_t> dims{2, 5, 8};
    // L_m from losses::infonce on the first m columns, each row divided by its length here.
    std::vector<double> L_m;
    for (int64_t m : dims)
        L_m.push_back(infonce(Var(unit_rows(slice(q, 1, 0, m))), Var(unit_rows(slice(p, 1, 0, m))), Var(), Var(), tau)
                          .value()
                          .item());
    for (const std::vector<double>& weights :
         {std::vector<double>{1, 1, 1}, std::vector<double>{1, 2, 3}, std::vector<double>{0.25, 4, 1e-3}}) {
        CAPTURE(weights[1]);
        double W = weights[0] + weights[1] + weights[2];
        double expected = (weights[0] * L_m[0] + weights[1] * L_m[1] + weights[2] * L_m[2]) / W;
        CHECK(scaled_error(matryoshka(Var(q), Var(p), Var(), tau, dims, weights).value().item(), expected) < 1e-12);
    }
    // Empty weights are all 1: the plain mean of the prefixes' losses.
    CHECK(scaled_error(matryoshka(Var(q), Var(p), Var(), tau, dims).value().item(),
                         (L_m[0] + L_m[1] + L_m[2]) / 3.0) < 1e-12);
    // Only the ratios of the weights count: scaling them all changes nothing, gradients included.
    LossAndGrads base = evaluate_loss(hand_matryoshka(tau, dims, {1, 2, 3}), {q, p});
    LossAndGrads scaled = evaluate_loss(hand_matryoshka(tau, dims, {10, 20, 30}), {q, p});
    CHECK(scaled_error(scaled.loss, base.loss) < 1e-14);
    CHECK(scaled_error(scaled.grads[0], base.grads[0]) < 1e-14);
    // The gradient is linear in the weights' shares: w = (1, 2, 3) is 1/6 of (1,0,0)... put
    // together from the prefixes alone (weights so lopsided that the others vanish in float64).
    LossAndGrads expected_grads{Tensor(), {zeros_like(q), zeros_like(p)}};
    std::vector<double> shares{1.0 / 6, 2.0 / 6, 3.0 / 6};
    for (size_t k = 0; k < dims.size(); ++k) {
        std::vector<double> alone(3, 1e-300);
        alone[k] = 1.0;
        LossAndGrads one = evaluate_loss(hand_matryoshka(tau, dims, alone), {q, p});
        CHECK(scaled_error(one.loss.item(), static_cast<Real>(L_m[k])) < 1e-12);
        // Columns beyond the prefix do not reach it: only the other prefixes' 1e-300 shares do.
        if (dims[k] < d) CHECK(max_abs(slice(one.grads[0], 1, dims[k], d)) < 1e-280);
        expected_grads.grads[0] = expected_grads.grads[0] + one.grads[0] * shares[k];
        expected_grads.grads[1] = expected_grads.grads[1] + one.grads[1] * shares[k];
    }
    CHECK(scaled_error(base.grads[0], expected_grads.grads[0]) < 1e-12);
    CHECK(scaled_error(base.grads[1], expected_grads.grads[1]) < 1e-12);
}

TEST_CASE("matryoshka: a one-column prefix is infonce on the signs, and passes no gradient") {
    // u_i = q_i1 / |q_i1| = sign(q_i1): l_ij = s_i t_j / tau. Nearby, u does not move, so the
    // prefix of one column adds to L but not to the gradient.
    Tensor q = matrix({{0.5, -1.0, 0.3}, {-2.0, 0.4, 0.9}, {0.7, 0.7, -0.2}});
    Tensor p = matrix({{1.5, 0.2, -0.6}, {0.3, -0.8, 1.1}, {-0.9, 0.5, 0.5}});
    double tau = 0.5;
    std::vector<double> s{1, -1, 1}, t{1, 1, -1};
    Real L1 = 0;
    for (int i = 0; i < 3; ++i) {
        Real total = 0;
        for (int j = 0; j < 3; ++j) total += std::exp(s[i] * t[j] / tau);
        L1 += std::log(total) - s[i] * t[i] / tau;
    }
    L1 /= 3;
    LossAndGrads whole = evaluate_loss(hand_matryoshka(tau, {3}, {}), {q, p});
    LossAndGrads both = evaluate_loss(hand_matryoshka(tau, {1, 3}, {1.0, 3.0}), {q, p});
    CHECK(scaled_error(both.loss.item(), (L1 + 3 * static_cast<Real>(whole.loss.item())) / 4) < 1e-12);
    CHECK(scaled_error(both.grads[0], whole.grads[0] * 0.75) < 1e-13);
    CHECK(scaled_error(both.grads[1], whole.grads[1] * 0.75) < 1e-13);
}

TEST_CASE("matryoshka: the default dims are d/8, d/4, d/2, d where whole numbers >= 1") {
    struct Case {
        int64_t d;
        std::vector<int64_t> dims;
    };
    for (const Case& c : {Case{768, {96, 192, 384, 768}}, Case{16, {2, 4, 8, 16}}, Case{8, {1, 2, 4, 8}},
                          Case{12, {3, 6, 12}}, Case{6, {3, 6}}, Case{4, {1, 2, 4}}, Case{3, {3}}, Case{2, {1, 2}},
                          Case{1, {1}}, Case{20, {5, 10, 20}}, Case{5, {5}}}) {
        CAPTURE(c.d);
        CHECK(matryoshka_default_dims(c.d) == c.dims);
    }
    // The loss with dims = "" equals the loss with the default written out.
    Generator generator(906);
    for (int64_t d : {1, 2, 12, 16}) {
        CAPTURE(d);
        Tensor q = random_rows(generator, 3, d), p = random_rows(generator, 3, d);
        CHECK(matryoshka(Var(q), Var(p), Var()).value().item() ==
              matryoshka(Var(q), Var(p), Var(), 0.05, matryoshka_default_dims(d)).value().item());
    }
}

TEST_CASE("matryoshka: a row's length does not matter; its gradient scales by 1/length") {
    Generator generator(907);
    Tensor q = random_rows(generator, 4, 8), p = random_rows(generator, 4, 8);
    Tensor lengths = Tensor::from_vector({3.0, 0.01, 1.0, 250.0}, {4, 1}, Dtype::Float64);
    LossAndGrads base = evaluate_loss(hand_matryoshka(0.05, {}, {}), {q, p});
    LossAndGrads scaled = evaluate_loss(hand_matryoshka(0.05, {}, {}), {q * lengths, p});
    CHECK(scaled_error(scaled.loss, base.loss) < 1e-13);
    CHECK(scaled_error(scaled.grads[0] * lengths, base.grads[0]) < 1e-12);
    CHECK(scaled_error(scaled.grads[1], base.grads[1]) < 1e-12);
    // Rows of huge or tiny entries (squares that overflow or underflow) are re-normalised all the same.
    for (double factor : {1e200, 1e-200}) {
        CAPTURE(factor);
        LossAndGrads extreme = evaluate_loss(hand_matryoshka(0.05, {}, {}), {q * factor, p});
        CHECK(scaled_error(extreme.loss, base.loss) < 1e-13);
        CHECK(scaled_error(extreme.grads[0] * factor, base.grads[0]) < 1e-12);
    }
}

TEST_CASE("matryoshka: log_tau sets tau = max(exp(log_tau), 1e-4); tau is then unused") {
    Generator generator(908);
    Tensor q = random_rows(generator, 4, 8), p = random_rows(generator, 4, 8);
    LossAndGrads fixed = evaluate_loss(hand_matryoshka(0.2, {}, {}), {q, p});
    LossAndGrads learnable = evaluate_loss(hand_matryoshka(0.05, {}, {}), {q, p, Tensor::scalar(std::log(0.2), Dtype::Float64)});
    CHECK(scaled_error(learnable.loss, fixed.loss) < 1e-13);
    CHECK(scaled_error(learnable.grads[0], fixed.grads[0]) < 1e-12);
    CHECK(learnable.grads[2].shape() == Shape{});
    // Below the clamp: tau = 1e-4, and dL/dlog_tau = 0; a [1] log_tau gets a [1] gradient.
    LossAndGrads at_floor = evaluate_loss(hand_matryoshka(1e-4, {}, {}), {q, p});
    LossAndGrads clamped = evaluate_loss(hand_matryoshka(0.05, {}, {}), {q, p, Tensor::full({1}, -20.0, Dtype::Float64)});
    CHECK(scaled_error(clamped.loss, at_floor.loss) < 1e-13);
    CHECK(clamped.grads[2].shape() == Shape{1});
    CHECK(clamped.grads[2].item() == 0.0);
    CHECK(std::isfinite(clamped.loss.item()));
    // Without a gradient (no_grad), the same loss.
    NoGradGuard no_grad;
    CHECK(matryoshka(Var(q), Var(p), Var(), 0.2).value().item() == fixed.loss.item());
}

TEST_CASE("matryoshka: float32 gives float32 results that agree with float64") {
    Generator generator(909);
    Tensor q = random_rows(generator, 6, 16), p = random_rows(generator, 6, 16);
    for (double tau : {0.05, 0.5}) {
        CAPTURE(tau);
        LossAndGrads f64 = evaluate_loss(hand_matryoshka(tau, {}, {1, 1, 2, 4}), {q, p, Tensor::scalar(std::log(tau), Dtype::Float64)});
        LossAndGrads f32 = evaluate_loss(hand_matryoshka(tau, {}, {1, 1, 2, 4}),
                                         {q.to(Dtype::Float32), p.to(Dtype::Float32),
                                          Tensor::scalar(std::log(tau), Dtype::Float32)});
        CHECK(f32.loss.dtype() == Dtype::Float32);
        CHECK(scaled_error(f32.loss, f64.loss) < 1e-5);
        for (size_t k = 0; k < 3; ++k) {
            CHECK(f32.grads[k].dtype() == Dtype::Float32);
            CHECK(scaled_error(f32.grads[k], f64.grads[k]) < 1e-4);
        }
    }
}

TEST_CASE("matryoshka: bad dims, weights and inputs throw one line naming the parameter or input") {
    Generator generator(910);
    Tensor qv = random_rows(generator, 3, 8), pv = random_rows(generator, 3, 8);
    Var q(qv), p(pv);
    // the parameters' text
    CHECK_ERROR_MENTIONS(parse_matryoshka_dims("2,abc,8"),
                         "matryoshka: parameter dims must be comma-separated whole numbers (prefix sizes, e.g. 64,128,256), "
                         "got 'abc' in '2,abc,8'");
    CHECK_ERROR_MENTIONS(parse_matryoshka_dims("-4,8"), "got '-4'");
    CHECK_ERROR_MENTIONS(parse_matryoshka_dims("4.0,8"), "got '4.0'");
    CHECK_ERROR_MENTIONS(parse_matryoshka_dims("1e2"), "got '1e2'");
    CHECK_ERROR_MENTIONS(parse_matryoshka_dims("4;8"), "got '4;8'");
    CHECK_ERROR_MENTIONS(parse_matryoshka_dims("99999999999999999999"), "got '99999999999999999999'");
    CHECK_ERROR_MENTIONS(parse_matryoshka_dims("2,,8"),
                         "matryoshka: parameter dims has an empty entry in '2,,8'; separate the entries by single commas, "
                         "e.g. 64,128,256");
    CHECK_ERROR_MENTIONS(parse_matryoshka_dims("2,8,"), "parameter dims has an empty entry in '2,8,'");
    CHECK_ERROR_MENTIONS(parse_matryoshka_dims(",8"), "parameter dims has an empty entry");
    CHECK_ERROR_MENTIONS(parse_matryoshka_weights("1,x"),
                         "matryoshka: parameter weights must be comma-separated finite numbers (e.g. 1,1,2), got 'x' in '1,x'");
    CHECK_ERROR_MENTIONS(parse_matryoshka_weights("1,nan"), "got 'nan'");
    CHECK_ERROR_MENTIONS(parse_matryoshka_weights("inf"), "got 'inf'");
    CHECK_ERROR_MENTIONS(parse_matryoshka_weights("1e999"), "got '1e999'");
    CHECK_ERROR_MENTIONS(parse_matryoshka_weights("1,,2"), "parameter weights has an empty entry in '1,,2'");
    // what the text may be: spaces around entries, and "" (or spaces) for the default
    CHECK(parse_matryoshka_dims(" 2, 4 ,8") == std::vector<int64_t>{2, 4, 8});
    CHECK(parse_matryoshka_dims("").empty());
    CHECK(parse_matryoshka_dims("  ").empty());
    CHECK(parse_matryoshka_weights("1, 0.5,2e0") == std::vector<double>{1.0, 0.5, 2.0});
    CHECK(parse_matryoshka_weights("").empty());

    // dims against d = 8
    CHECK_ERROR_MENTIONS(matryoshka(q, p, Var(), 0.05, {0, 4, 8}),
                         "matryoshka: parameter dims must hold prefix sizes >= 1, got 0 in 0,4,8; remove it");
    CHECK_ERROR_MENTIONS(matryoshka(q, p, Var(), 0.05, {4, 12}),
                         "matryoshka: parameter dims has 12 > d = 8 (q and p have 8 columns); each prefix size must be at "
                         "most d");
    CHECK_ERROR_MENTIONS(matryoshka(q, p, Var(), 0.05, {4, 2, 8}),
                         "matryoshka: parameter dims must be strictly ascending, got 4,2,8 (2 after 4); list each prefix "
                         "size once, smallest first");
    CHECK_ERROR_MENTIONS(matryoshka(q, p, Var(), 0.05, {2, 2, 8}), "must be strictly ascending, got 2,2,8 (2 after 2)");
    CHECK_ERROR_MENTIONS(matryoshka(q, p, Var(), 0.05, {2, 4}),
                         "matryoshka: parameter dims must end with d = 8 (the whole embedding), got 2,4; add 8 at the end");
    // weights
    CHECK_ERROR_MENTIONS(matryoshka(q, p, Var(), 0.05, {4, 8}, {1, 2, 3}),
                         "matryoshka: parameter weights has 3 entries but dims has 2 (4,8); give one weight per prefix size");
    CHECK_ERROR_MENTIONS(matryoshka(q, p, Var(), 0.05, {}, {1, 2}),
                         "parameter weights has 2 entries but dims has 4 (1,2,4,8, the default for this d)");
    CHECK_ERROR_MENTIONS(matryoshka(q, p, Var(), 0.05, {4, 8}, {1, 0}),
                         "matryoshka: parameter weights must be finite numbers > 0, got 0 for prefix size 8 (weights 1,0)");
    CHECK_ERROR_MENTIONS(matryoshka(q, p, Var(), 0.05, {4, 8}, {-1, 1}), "got -1 for prefix size 4");
    CHECK_ERROR_MENTIONS(matryoshka(q, p, Var(), 0.05, {4, 8}, {1, std::nan("")}), "must be finite numbers > 0, got nan");
    CHECK_ERROR_MENTIONS(matryoshka(q, p, Var(), 0.05, {4, 8}, {kInfinity, 1}), "got inf for prefix size 4");
    // a row that is zero in a prefix (or whole) cannot be re-normalised
    Tensor zero_prefix = qv.clone();
    for (int64_t j = 0; j < 2; ++j) zero_prefix.data<double>()[1 * 8 + j] = 0.0;
    CHECK_ERROR_MENTIONS(matryoshka(Var(zero_prefix), p, Var(), 0.05, {2, 4, 8}),
                         "matryoshka: row 1 of q is zero in its first 2 columns (prefix size 2), so it cannot be "
                         "re-normalised to unit length; give every row a nonzero entry there, or leave 2 out of dims");
    CHECK_ERROR_MENTIONS(matryoshka(Var(zero_prefix), p, Var()), "row 1 of q is zero in its first 1 columns (prefix size 1)");
    CHECK(std::isfinite(matryoshka(Var(zero_prefix), p, Var(), 0.05, {4, 8}).value().item()));  // not a prefix used
    Tensor zero_row = pv.clone();
    for (int64_t j = 0; j < 8; ++j) zero_row.data<double>()[2 * 8 + j] = 0.0;
    CHECK_ERROR_MENTIONS(matryoshka(q, Var(zero_row), Var(), 0.05, {8}), "row 2 of p is zero in its first 8 columns");
    // inputs, as infonce checks them
    CHECK_ERROR_MENTIONS(matryoshka(q, Var(random_rows(generator, 3, 6)), Var()),
                         "matryoshka: q [3, 8] and p [3, 6] must have the same shape");
    CHECK_ERROR_MENTIONS(matryoshka(q, Var(random_rows(generator, 4, 8)), Var()), "q [3, 8] and p [4, 8] must have the same shape");
    CHECK_ERROR_MENTIONS(matryoshka(Var(qv.reshape({24})), p, Var()), "matryoshka: q must be a matrix [rows, d], got shape [24]");
    CHECK_ERROR_MENTIONS(matryoshka(Var(slice(qv, 0, 0, 1)), Var(slice(pv, 0, 0, 1)), Var()),
                         "matryoshka: needs N (rows of q, p; the other rows are the negatives) >= 2 (got 1)");
    CHECK_ERROR_MENTIONS(matryoshka(q, Var(pv.to(Dtype::Float32)), Var()), "matryoshka: p is float32 but q is float64");
    CHECK_ERROR_MENTIONS(matryoshka(q, Var(), Var()), "matryoshka: input p is missing");
    CHECK_ERROR_MENTIONS(matryoshka(Var(Tensor::zeros({3, 0}, Dtype::Float64)), Var(Tensor::zeros({3, 0}, Dtype::Float64)),
                                    Var()),
                         "matryoshka: q and p [3, 0] have no columns; they need d >= 1");
    Tensor bad = qv.clone();
    bad.data<double>()[5] = std::nan("");
    CHECK_ERROR_MENTIONS(matryoshka(Var(bad), p, Var()), "matryoshka: q contains NaN or Inf");
    CHECK_ERROR_MENTIONS(matryoshka(q, p, Var(), 0.0), "matryoshka: parameter tau must be a finite number > 0, got 0");
    CHECK_ERROR_MENTIONS(matryoshka(q, p, Var(), -1.0), "parameter tau must be a finite number > 0");
    CHECK_ERROR_MENTIONS(matryoshka(q, p, Var(Tensor::zeros({2}, Dtype::Float64))),
                         "matryoshka: log_tau must have one element (shape [] or [1]), got [2]");
    CHECK_ERROR_MENTIONS(matryoshka(q, p, Var(Tensor::scalar(kInfinity, Dtype::Float64))), "matryoshka: log_tau is inf");
}

TEST_CASE("matryoshka: the definition takes the spec's inputs and defaults; compute equals the typed function") {
    LossDefinition definition = matryoshka_definition();
    CHECK(definition.name == "matryoshka");
    REQUIRE(definition.inputs.size() == 3);
    CHECK(definition.inputs[0].name == "q");
    CHECK(definition.inputs[0].kind == InputKind::Embedding);
    CHECK(definition.inputs[0].required);
    CHECK(definition.inputs[1].name == "p");
    CHECK(definition.inputs[1].kind == InputKind::Embedding);
    CHECK(definition.inputs[1].required);
    CHECK(definition.inputs[2].name == "log_tau");
    CHECK(definition.inputs[2].kind == InputKind::Scalar);
    CHECK(!definition.inputs[2].required);
    REQUIRE(definition.params.size() == 3);
    CHECK(definition.params[0].name == "tau");
    CHECK(definition.params[0].default_value == "0.05");
    CHECK(definition.params[0].rule == ParamRule::Positive);
    CHECK(definition.params[1].name == "dims");
    CHECK(definition.params[1].default_value == "");
    CHECK(definition.params[1].rule == ParamRule::Text);
    CHECK(definition.params[2].name == "weights");
    CHECK(definition.params[2].default_value == "");
    CHECK(definition.params[2].rule == ParamRule::Text);

    // Through make_arguments (what `nce loss` does): the texts are parsed; the same loss and
    // gradients as the typed function.
    Generator generator(911);
    auto example = definition.example(generator, 5, 8);
    CHECK(example["q"].shape() == Shape{5, 8});
    CHECK(example["p"].shape() == Shape{5, 8});
    CHECK(example["log_tau"].numel() == 1);
    example.erase("log_tau");
    LossArguments arguments = make_arguments(definition, example, {{"tau", "0.2"}, {"dims", "2, 4,8"}, {"weights", "1,2,0.5"}});
    Var through_registry = definition.compute(arguments);
    through_registry.backward();
    LossAndGrads typed = evaluate_loss(hand_matryoshka(0.2, {2, 4, 8}, {1, 2, 0.5}), {example["q"], example["p"]});
    CHECK(through_registry.value().item() == typed.loss.item());
    CHECK(max_abs_difference(arguments.input("q").grad(), typed.grads[0]) == 0);
    CHECK(max_abs_difference(arguments.input("p").grad(), typed.grads[1]) == 0);
    CHECK(scaled_error(through_registry.value().item(),
                         naive_matryoshka(example["q"], example["p"], 0.2, {2, 4, 8}, {1, 2, 0.5}).loss) < 1e-12);
    // The defaults: dims and weights empty (d = 8: 1, 2, 4, 8, all weighted 1).
    LossArguments defaults = make_arguments(definition, example, {});
    CHECK(defaults.text("dims") == "");
    CHECK(definition.compute(defaults).value().item() ==
          matryoshka(Var(example["q"]), Var(example["p"]), Var(), 0.05, {1, 2, 4, 8}, {1, 1, 1, 1}).value().item());
    // Errors: tau by its rule in make_arguments; dims and weights when the loss reads them.
    CHECK_ERROR_MENTIONS(make_arguments(definition, example, {{"tau", "0"}}), "matryoshka: parameter tau must be > 0");
    CHECK_ERROR_MENTIONS(definition.compute(make_arguments(definition, example, {{"dims", "4,16"}})),
                         "parameter dims has 16 > d = 8");
    CHECK_ERROR_MENTIONS(definition.compute(make_arguments(definition, example, {{"weights", "1,x"}})),
                         "parameter weights must be comma-separated finite numbers");
    CHECK_ERROR_MENTIONS(make_arguments(definition, example, {{"dim", "8"}}), "matryoshka takes: tau, dims, weights");
    example.erase("p");
    CHECK_ERROR_MENTIONS(make_arguments(definition, example, {}),
                         "required input p is missing (matryoshka takes q, p, optional log_tau)");
}

TEST_CASE("matryoshka: the registry's gradient checks (nce gradcheck matryoshka) pass in both dtypes") {
    CheckRegistry registry;
    register_loss_checks(registry);
    int cases = 0;
    for (const CheckCase& check : registry.cases()) {
        if (check.op != "matryoshka") continue;
        ++cases;
        CHECK(check.constant_inputs.empty());
        for (Dtype dtype : testing::kFloatDtypes) {
            for (uint64_t seed : {1, 2, 3}) {
                INFO(check.description << " " << dtype_name(dtype) << " seed " << seed);
                CHECK(run_check(check, dtype, seed).passed);
            }
        }
    }
    CHECK(cases == 2);
}

}  // namespace matryoshka_tests
