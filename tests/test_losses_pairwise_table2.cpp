// Table 2 of docs/losses_contract.md, its pairwise losses: siglip, dcl, debiased, megabatch_margin.
// Each hand-derived backward is proved three ways, in float64: (1) against central finite
// differences (gradcheck), (2) against the same formula composed from the engine's Var ops
// and differentiated by autograd (loss and every gradient equal to ~1e-12), (3) against
// closed forms (docs/derivations/). Forward values are checked against naive long-double
// loops written here. Then: the pitfalls the issue names, stability at extreme inputs, and
// one-line errors for bad ones.
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

namespace pairwise_table2_tests {

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
        CHECK(h.grads[i].shape() == inputs[i].shape());
        CHECK(relative_error(h.grads[i], c.grads[i]) <= tolerance);
    }
}

// Central finite differences agree with the hand backward for every input (gradcheck's
// float64 tolerance, 1e-6 relative to the gradient's scale). Returns the largest error.
double check_finite_differences(const LossFunction& f, const std::vector<Tensor>& inputs, double eps = 0) {
    GradcheckOptions options;
    options.eps = eps;
    GradcheckResult result = gradcheck(f, inputs, options);
    CAPTURE(result.max_rel_error);
    CHECK(result.passed);
    return result.max_rel_error;
}

bool all_grads_finite(const LossAndGrads& result) {
    bool finite = all_finite(result.loss);
    for (const Tensor& grad : result.grads) finite = finite && all_finite(grad);
    return finite;
}

// Each row divided by its length.
Tensor normalize_rows(const Tensor& x) { return x / sqrt(sum(x * x, 1, /*keepdim=*/true)); }

// A second view of unit rows x: x plus `noise` times random unit rows, renormalised.
Tensor noisy_view(Generator& generator, const Tensor& x, double noise) {
    return normalize_rows(x + random_unit_rows(generator, x.size(0), x.size(1)) * noise);
}

// Plain dot products of rows in long double: out[i][j] = x_i·y_j.
std::vector<std::vector<Real>> naive_dots(const Tensor& x, const Tensor& y) {
    int64_t rows = x.size(0), columns = y.size(0), d = x.size(1);
    std::vector<double> X = x.to_vector(), Y = y.to_vector();
    std::vector<std::vector<Real>> out(static_cast<size_t>(rows), std::vector<Real>(static_cast<size_t>(columns), 0));
    for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < columns; ++j)
            for (int64_t k = 0; k < d; ++k) out[i][j] += static_cast<Real>(X[i * d + k]) * Y[j * d + k];
    return out;
}

// 1 off the diagonal, 0 on it.   [n, n]
Tensor off_diagonal_ones(int64_t n) {
    Tensor mask = Tensor::full({n, n}, 1.0, Dtype::Float64);
    for (int64_t i = 0; i < n; ++i) mask.data<double>()[i * n + i] = 0.0;
    return mask;
}

Real naive_softplus(Real t) { return std::max<Real>(t, 0) + std::log1p(std::exp(-std::fabs(t))); }
Real naive_sigmoid(Real t) { return t >= 0 ? 1 / (1 + std::exp(-t)) : std::exp(t) / (1 + std::exp(t)); }

// ---- siglip ----------------------------------------------------------------------------

// L = (1/N) sum_ij softplus(-z_ij g_ij), g_ij = exp(log_scale) x_i·y_j + bias, in long double.
Real naive_siglip(const Tensor& x, const Tensor& y, double log_scale, double bias) {
    auto dots = naive_dots(x, y);
    int64_t N = x.size(0);
    Real total = 0;
    for (int64_t i = 0; i < N; ++i)
        for (int64_t j = 0; j < N; ++j) {
            Real g = std::exp(static_cast<Real>(log_scale)) * dots[i][j] + bias;
            total += naive_softplus(i == j ? -g : g);
        }
    return total / N;
}

// The closed-form gradients in loops: G_ij = -(1/N) z_ij sigmoid(-z_ij g_ij);
// dL/dx_i = scale sum_j G_ij y_j, dL/dy_j = scale sum_i G_ij x_i,
// dL/dlog_scale = scale sum_ij G_ij x_i·y_j, dL/dbias = sum_ij G_ij.
std::vector<Tensor> naive_siglip_gradients(const Tensor& x, const Tensor& y, const Tensor& log_scale,
                                           const Tensor& bias) {
    auto dots = naive_dots(x, y);
    int64_t N = x.size(0), d = x.size(1);
    Real scale = std::exp(static_cast<Real>(log_scale.item()));
    std::vector<double> X = x.to_vector(), Y = y.to_vector(), dx(X.size(), 0.0), dy(Y.size(), 0.0);
    Real dlog_scale = 0, dbias = 0;
    for (int64_t i = 0; i < N; ++i)
        for (int64_t j = 0; j < N; ++j) {
            Real z = i == j ? 1 : -1;
            Real G = -z * naive_sigmoid(-z * (scale * dots[i][j] + bias.item())) / N;
            dbias += G;
            dlog_scale += G * scale * dots[i][j];
            for (int64_t k = 0; k < d; ++k) {
                dx[i * d + k] += static_cast<double>(scale * G * Y[j * d + k]);
                dy[j * d + k] += static_cast<double>(scale * G * X[i * d + k]);
            }
        }
    return {Tensor::from_vector(dx, x.shape(), Dtype::Float64), Tensor::from_vector(dy, y.shape(), Dtype::Float64),
            Tensor::full(log_scale.shape(), static_cast<double>(dlog_scale), Dtype::Float64),
            Tensor::full(bias.shape(), static_cast<double>(dbias), Dtype::Float64)};
}

// The same loss from Var ops: -log sigmoid(z ⊙ g), summed and divided by N.
Var composed_siglip(const Var& x, const Var& y, const Var& log_scale, const Var& bias) {
    int64_t N = x.size(0);
    Tensor signs = off_diagonal_ones(N) * -2.0 + 1.0;  // z: 1 on the diagonal, -1 elsewhere
    Var logits = exp(log_scale) * matmul(x, y, Transpose::Second) + bias;
    return sum(-log(sigmoid(Var(signs) * logits))) / static_cast<double>(N);
}

LossFunction hand_siglip() {
    return [](const std::vector<Var>& in) { return siglip(in[0], in[1], in[2], in[3]); };
}
LossFunction composed_siglip() {
    return [](const std::vector<Var>& in) { return composed_siglip(in[0], in[1], in[2], in[3]); };
}

std::vector<Tensor> siglip_problem(Generator& generator, int64_t N, int64_t d, double log_scale, double bias,
                                   const Shape& scalar_shape) {
    Tensor x = random_unit_rows(generator, N, d);
    return {x, noisy_view(generator, x, 1.0), Tensor::full(scalar_shape, log_scale, Dtype::Float64),
            Tensor::full(scalar_shape, bias, Dtype::Float64)};
}

TEST_CASE("siglip: hand backward equals finite differences, composition, loops and naive forward") {
    Generator generator(401);
    double largest_error = 0;
    for (auto [N, d] : {std::pair<int64_t, int64_t>{1, 3}, {4, 5}, {9, 16}}) {
        for (auto [log_scale, bias] : {std::pair{std::log(10.0), -10.0}, {0.0, 0.0}, {1.5, -3.0}}) {
            for (const Shape& scalar_shape : {Shape{1}, Shape{}}) {
                CAPTURE(N);
                CAPTURE(log_scale);
                CAPTURE(bias);
                std::vector<Tensor> inputs = siglip_problem(generator, N, d, log_scale, bias, scalar_shape);
                largest_error = std::max(largest_error, check_finite_differences(hand_siglip(), inputs));
                check_matches_composition(hand_siglip(), composed_siglip(), inputs);
                LossAndGrads result = evaluate_loss(hand_siglip(), inputs);
                CHECK(relative_error(result.loss.item(), naive_siglip(inputs[0], inputs[1], log_scale, bias)) < 1e-13);
                std::vector<Tensor> expected = naive_siglip_gradients(inputs[0], inputs[1], inputs[2], inputs[3]);
                for (size_t k = 0; k < 4; ++k) CHECK(relative_error(result.grads[k], expected[k]) < 1e-12);
            }
        }
    }
    MESSAGE("siglip: largest finite-difference error " << largest_error);
}

TEST_CASE("siglip: gradients reach log_scale and bias, in their own shapes") {
    Generator generator(402);
    for (const Shape& scalar_shape : {Shape{1}, Shape{}}) {
        std::vector<Tensor> inputs = siglip_problem(generator, 5, 4, std::log(10.0), -10.0, scalar_shape);
        LossAndGrads result = evaluate_loss(hand_siglip(), inputs);
        CHECK(result.grads[2].shape() == scalar_shape);
        CHECK(result.grads[3].shape() == scalar_shape);
        // At the start (bias -10) every pair looks negative: the bias is pushed up and its
        // gradient, sum_ij G_ij, is negative and nonzero; so is the scale's.
        CHECK(result.grads[3].item() < -1e-3);
        CHECK(std::fabs(result.grads[2].item()) > 1e-3);
        // Moving bias by h changes L by about h · dL/dbias (a one-sided sanity check).
        double h = 1e-7;
        std::vector<Tensor> moved = inputs;
        moved[3] = inputs[3] + h;
        double slope = (evaluate_loss(hand_siglip(), moved).loss.item() - result.loss.item()) / h;
        CHECK(std::fabs(slope - result.grads[3].item()) < 1e-5);
    }
}

TEST_CASE("siglip: a batch of size 1 is valid and has the closed form softplus(-g)") {
    Generator generator(403);
    std::vector<Tensor> inputs = siglip_problem(generator, 1, 6, 0.7, 0.4, Shape{1});
    double scale = std::exp(0.7), dot = sum(inputs[0] * inputs[1]).item(), g = scale * dot + 0.4;
    LossAndGrads result = evaluate_loss(hand_siglip(), inputs);
    // L = softplus(-g); dL/dg = -sigmoid(-g); dL/dx = dL/dg scale y; dL/dy = dL/dg scale x;
    // dL/dlog_scale = dL/dg scale x·y; dL/dbias = dL/dg.
    double slope = -1.0 / (1.0 + std::exp(g));
    CHECK(relative_error(result.loss.item(), std::log1p(std::exp(-g))) < 1e-14);
    CHECK(relative_error(result.grads[0], inputs[1] * (slope * scale)) < 1e-14);
    CHECK(relative_error(result.grads[1], inputs[0] * (slope * scale)) < 1e-14);
    CHECK(relative_error(result.grads[2].item(), slope * scale * dot) < 1e-14);
    CHECK(relative_error(result.grads[3].item(), slope) < 1e-14);
    check_finite_differences(hand_siglip(), inputs);
}

TEST_CASE("siglip: a huge exp(log_scale) and identical rows stay finite and match the stable loops") {
    Generator generator(404);
    // exp(20) ~ 5e8: logits in the hundreds of millions, where log(1 + exp(-zg)) overflows
    // when written naively. log_scale 700 is near float64's limit; identical rows make
    // every pair look alike.
    Tensor x = random_unit_rows(generator, 4, 5);
    Tensor first = slice(x, 0, 0, 1);
    Tensor same = concat({first, first, first, first}, 0);  // [4, 5], identical rows
    struct Case {
        const char* what;
        Tensor x, y;
        double log_scale, bias;
    };
    for (const Case& c : {Case{"exp(20)", x, noisy_view(generator, x, 0.3), 20.0, -5.0},
                          Case{"exp(700)", x, noisy_view(generator, x, 0.3), 700.0, 0.0},
                          Case{"identical rows", same, same, std::log(10.0), -10.0},
                          Case{"identical rows, exp(30)", same, same, 30.0, 3.0}}) {
        CAPTURE(c.what);
        std::vector<Tensor> inputs{c.x, c.y, Tensor::full({1}, c.log_scale, Dtype::Float64),
                                   Tensor::full({1}, c.bias, Dtype::Float64)};
        LossAndGrads result = evaluate_loss(hand_siglip(), inputs);
        REQUIRE(all_grads_finite(result));
        CHECK(relative_error(result.loss.item(), naive_siglip(c.x, c.y, c.log_scale, c.bias)) < 1e-12);
        std::vector<Tensor> expected = naive_siglip_gradients(c.x, c.y, inputs[2], inputs[3]);
        for (size_t k = 0; k < 4; ++k) CHECK(relative_error(result.grads[k], expected[k]) < 1e-12);
    }
}

TEST_CASE("siglip: bad inputs throw one line naming the input") {
    Generator generator(405);
    Var x(random_unit_rows(generator, 3, 4)), y(random_unit_rows(generator, 3, 4));
    Var log_scale(Tensor::full({1}, 2.3, Dtype::Float64)), bias(Tensor::full({1}, -10.0, Dtype::Float64));
    CHECK_ERROR_MENTIONS(siglip(x, Var(random_unit_rows(generator, 2, 4)), log_scale, bias), "y [2, 4]");
    CHECK_ERROR_MENTIONS(siglip(Var(Tensor::zeros({3}, Dtype::Float64)), y, log_scale, bias), "x must be a matrix");
    CHECK_ERROR_MENTIONS(siglip(x, Var(y.value().to(Dtype::Float32)), log_scale, bias), "same dtype");
    CHECK_ERROR_MENTIONS(siglip(x, y, Var(Tensor::zeros({2}, Dtype::Float64)), bias),
                         "log_scale must have one element");
    CHECK_ERROR_MENTIONS(siglip(x, y, Var(), bias), "log_scale is missing");
    CHECK_ERROR_MENTIONS(siglip(x, y, log_scale, Var(Tensor::full({1}, NAN, Dtype::Float64))), "bias is nan");
    CHECK_ERROR_MENTIONS(siglip(x, y, Var(Tensor::full({1}, 800.0, Dtype::Float64)), bias), "exp(log_scale) overflows");
    CHECK_ERROR_MENTIONS(siglip(Var(x.value().to(Dtype::Float32)), Var(y.value().to(Dtype::Float32)),
                                Var(Tensor::full({1}, 100.0, Dtype::Float32)),
                                Var(Tensor::full({1}, 0.0, Dtype::Float32))),
                         "exp(log_scale) overflows float32");
    Tensor with_inf = x.value().clone();
    with_inf.data<double>()[2] = INFINITY;
    CHECK_ERROR_MENTIONS(siglip(Var(with_inf), y, log_scale, bias), "x contains NaN or Inf");
    CHECK_ERROR_MENTIONS(siglip(Var(Tensor::zeros({0, 4}, Dtype::Float64)), Var(Tensor::zeros({0, 4}, Dtype::Float64)),
                                log_scale, bias),
                         "N (rows of x, y) >= 1");
}

// ---- dcl -------------------------------------------------------------------------------

// D_i(a,b) = -a_i·b_i/tau + log( sum_{k != i} exp(a_i·a_k/tau) + sum_{k != i} exp(a_i·b_k/tau) ),
// in long double with the row's largest term factored out.
Real naive_dcl_direction(const Tensor& a, const Tensor& b, double tau) {
    auto same = naive_dots(a, a), cross = naive_dots(a, b);
    int64_t N = a.size(0);
    Real total = 0;
    for (int64_t i = 0; i < N; ++i) {
        Real largest = -INFINITY;
        for (int64_t k = 0; k < N; ++k)
            if (k != i) largest = std::max({largest, same[i][k] / tau, cross[i][k] / tau});
        Real denominator = 0;
        for (int64_t k = 0; k < N; ++k)
            if (k != i) denominator += std::exp(same[i][k] / tau - largest) + std::exp(cross[i][k] / tau - largest);
        total += -cross[i][i] / tau + largest + std::log(denominator);
    }
    return total;
}
Real naive_dcl(const Tensor& u, const Tensor& v, double tau) {
    return (naive_dcl_direction(u, v, tau) + naive_dcl_direction(v, u, tau)) / u.size(0);
}

// The same loss from Var ops: exp of the similarity blocks, the diagonal multiplied away.
Var composed_dcl(const Var& u, const Var& v, double tau) {
    int64_t N = u.size(0);
    Var keep(off_diagonal_ones(N));
    auto direction = [&](const Var& a, const Var& b) {
        Var same = exp(matmul(a, a, Transpose::Second) / tau) * keep;
        Var cross = exp(matmul(a, b, Transpose::Second) / tau) * keep;
        return sum(log(sum(same, 1) + sum(cross, 1))) - sum(sum(a * b, 1)) / tau;
    };
    return (direction(u, v) + direction(v, u)) / static_cast<double>(N);
}

LossFunction hand_dcl(double tau) {
    return [=](const std::vector<Var>& in) { return dcl(in[0], in[1], tau); };
}
LossFunction composed_dcl(double tau) {
    return [=](const std::vector<Var>& in) { return composed_dcl(in[0], in[1], tau); };
}

TEST_CASE("dcl: hand backward equals finite differences, composition and naive forward") {
    Generator generator(411);
    double largest_error = 0;
    for (auto [N, d] : {std::pair<int64_t, int64_t>{2, 3}, {5, 4}, {9, 16}}) {
        for (double tau : {0.1, 0.5, 2.0}) {
            CAPTURE(N);
            CAPTURE(tau);
            Tensor u = random_unit_rows(generator, N, d);
            std::vector<Tensor> inputs{u, noisy_view(generator, u, 0.7)};
            largest_error = std::max(largest_error, check_finite_differences(hand_dcl(tau), inputs));
            check_matches_composition(hand_dcl(tau), composed_dcl(tau), inputs);
            Var loss = dcl(Var(inputs[0]), Var(inputs[1]), tau);
            CHECK(relative_error(loss.value().item(), naive_dcl(inputs[0], inputs[1], tau)) < 1e-13);
        }
    }
    MESSAGE("dcl: largest finite-difference error " << largest_error);
}

TEST_CASE("dcl: the positive is left out of the denominator (N = 2 closed form)") {
    Generator generator(412);
    // With N = 2, row 0 of direction (u,v) has exactly two negatives, u_1 and v_1:
    //   D_0(u,v) = -u_0·v_0/tau + log( exp(u_0·u_1/tau) + exp(u_0·v_1/tau) )
    // Its gradient with respect to u_0 is -v_0/tau + (w u_1 + (1-w) v_1)/tau, w the
    // softmax weight of u_0·u_1: the positive v_0 pulls with its full weight 1, not 1 - P.
    double tau = 0.3;
    Tensor u = random_unit_rows(generator, 2, 4), v = random_unit_rows(generator, 2, 4);
    auto dot = [](const Tensor& a, const Tensor& b) { return sum(a * b).item(); };
    Tensor u0 = slice(u, 0, 0, 1), u1 = slice(u, 0, 1, 2), v0 = slice(v, 0, 0, 1), v1 = slice(v, 0, 1, 2);
    auto D = [&](const Tensor& a0, const Tensor& a1, const Tensor& b0, const Tensor& b1) {
        return -dot(a0, b0) / tau + std::log(std::exp(dot(a0, a1) / tau) + std::exp(dot(a0, b1) / tau));
    };
    double expected = (D(u0, u1, v0, v1) + D(u1, u0, v1, v0) + D(v0, v1, u0, u1) + D(v1, v0, u1, u0)) / 2.0;
    LossAndGrads result = evaluate_loss(hand_dcl(tau), {u, v});
    CHECK(relative_error(result.loss.item(), expected) < 1e-14);
    check_finite_differences(hand_dcl(tau), {u, v});
    // InfoNCE with the positive in the denominator would give a different value.
    double with_positive = -dot(u0, v0) / tau + std::log(std::exp(dot(u0, u1) / tau) + std::exp(dot(u0, v1) / tau) +
                                                         std::exp(dot(u0, v0) / tau));
    CHECK(std::fabs(with_positive - D(u0, u1, v0, v1)) > 1e-3);
}

TEST_CASE("dcl: identical rows give L = 2 log(2(N-1)) and zero gradients") {
    Generator generator(413);
    // Every similarity is 1/tau, so each lse is 1/tau + log(2(N-1)) and cancels the positive's
    // -1/tau: D_i = log(2(N-1)). The softmax is uniform over the 2(N-1) negatives, and the
    // pulls on each row cancel: dL/du = dL/dv = 0.
    for (double tau : {0.1, 1e-4}) {
        for (int64_t N : {2, 5}) {
            CAPTURE(tau);
            CAPTURE(N);
            Tensor row = random_unit_rows(generator, 1, 6);
            std::vector<Tensor> parts(static_cast<size_t>(N), row);
            Tensor same = concat(parts, 0);
            LossAndGrads result = evaluate_loss(hand_dcl(tau), {same, same});
            // Rounding: the lse adds log(2(N-1)) to 1/tau and the positive takes 1/tau away again.
            CHECK(relative_error(result.loss.item(), 2 * std::log(2.0L * (N - 1))) < 1e-15 / tau + 1e-14);
            CHECK(max_abs(result.grads[0]) < 1e-14 / tau);
            CHECK(max_abs(result.grads[1]) < 1e-14 / tau);
        }
    }
}

TEST_CASE("dcl: tau = 1e-4 and logits in the thousands stay finite and match the references") {
    Generator generator(414);
    for (auto [tau, size] : {std::pair{1e-4, 1.0}, {0.1, 100.0}, {1e-4, 10.0}}) {
        CAPTURE(tau);
        CAPTURE(size);
        Tensor u = random_unit_rows(generator, 5, 4) * size;
        Tensor v = noisy_view(generator, u / size, 0.5) * size;
        LossAndGrads result = evaluate_loss(hand_dcl(tau), {u, v});
        REQUIRE(all_grads_finite(result));
        CHECK(relative_error(result.loss.item(), naive_dcl(u, v, tau)) < 1e-12);
    }
    // Moderate logits (up to 50) where the composition's plain exp still fits: equal.
    Tensor u = random_unit_rows(generator, 5, 4);
    check_matches_composition(hand_dcl(0.02), composed_dcl(0.02), {u, noisy_view(generator, u, 0.5)});
}

TEST_CASE("dcl: bad inputs throw one line naming the input or parameter") {
    Generator generator(415);
    Var u(random_unit_rows(generator, 3, 4)), v(random_unit_rows(generator, 3, 4));
    CHECK_ERROR_MENTIONS(dcl(u, Var(random_unit_rows(generator, 3, 5))), "v [3, 5]");
    CHECK_ERROR_MENTIONS(dcl(Var(random_unit_rows(generator, 1, 4)), Var(random_unit_rows(generator, 1, 4))),
                         "N (rows of u, v; the other rows are the negatives) >= 2");
    CHECK_ERROR_MENTIONS(dcl(u, v, 0.0), "tau must be a finite number > 0");
    CHECK_ERROR_MENTIONS(dcl(u, Var(v.value().to(Dtype::Float32))), "same dtype");
    Tensor with_nan = v.value().clone();
    with_nan.data<double>()[0] = NAN;
    CHECK_ERROR_MENTIONS(dcl(u, Var(with_nan)), "v contains NaN");
}

// ---- debiased --------------------------------------------------------------------------

struct DebiasedParameters {
    double t, tau_plus, beta;
};

struct NaiveDebiased {
    Real loss = 0;
    int clamped_rows = 0, debiased_rows = 0;
};

// The spec's formula in long double, one row at a time. Every quantity of row i is
// multiplied by exp(-m_i), m_i the row's largest z_i·z_j/t over j != i; the clamp
// M exp(-1/t) is multiplied by the same factor, so the max compares like with like. The
// importance weights are shifted by their own largest exponent (their scale cancels in R_i).
NaiveDebiased naive_debiased(const Tensor& u, const Tensor& v, const DebiasedParameters& parameters) {
    Tensor z = concat({u, v}, 0);
    auto dots = naive_dots(z, z);
    int64_t rows = z.size(0), N = rows / 2;
    Real M = rows - 2, t = parameters.t, beta = parameters.beta, tau_plus = parameters.tau_plus;
    NaiveDebiased result;
    for (int64_t i = 0; i < rows; ++i) {
        int64_t positive = (i + N) % rows;
        Real largest = -INFINITY, largest_negative = -INFINITY;
        for (int64_t j = 0; j < rows; ++j) {
            if (j == i) continue;
            largest = std::max(largest, dots[i][j] / t);
            if (j != positive) largest_negative = std::max(largest_negative, dots[i][j] / t);
        }
        Real pos = std::exp(dots[i][positive] / t - largest);
        Real weighted = 0, weights = 0;
        for (int64_t j = 0; j < rows; ++j) {
            if (j == i || j == positive) continue;
            Real importance = std::exp(beta * (dots[i][j] / t - largest_negative));
            weighted += importance * std::exp(dots[i][j] / t - largest);
            weights += importance;
        }
        Real R = weighted / (weights / M);
        Real debiased_value = (R - tau_plus * M * pos) / (1 - tau_plus);
        Real clamp = M * std::exp(-1 / t - largest);
        Real Ng = std::max(debiased_value, clamp);
        (debiased_value > clamp ? result.debiased_rows : result.clamped_rows) += 1;
        result.loss += -std::log(pos / (pos + Ng));
    }
    result.loss /= rows;
    return result;
}

// The same loss from Var ops, as the spec writes it (plain exp: moderate t only). With
// `detach_importance` the weights imp_ij are constants: the mistake the issue warns about.
Var composed_debiased(const Var& u, const Var& v, const DebiasedParameters& parameters,
                      bool detach_importance = false) {
    int64_t N = u.size(0), rows = 2 * N;
    double M = static_cast<double>(rows - 2), t = parameters.t, tau_plus = parameters.tau_plus;
    std::vector<double> positive_mask(static_cast<size_t>(rows * rows), 0.0), negative_mask(positive_mask.size(), 1.0);
    for (int64_t i = 0; i < rows; ++i) {
        positive_mask[i * rows + (i + N) % rows] = 1.0;
        negative_mask[i * rows + (i + N) % rows] = 0.0;
        negative_mask[i * rows + i] = 0.0;
    }
    Var positives(Tensor::from_vector(positive_mask, {rows, rows}, u.dtype()));
    Var negatives(Tensor::from_vector(negative_mask, {rows, rows}, u.dtype()));
    Var z = concat({u, v}, 0);
    Var logits = matmul(z, z, Transpose::Second) / t;                         // [2N, 2N]
    Var pos = sum(exp(logits) * positives, 1);                               // [2N]
    Var importance = exp((detach_importance ? logits.detach() : logits) * parameters.beta) * negatives;
    Var R = sum(importance * exp(logits), 1) / (sum(importance, 1) / M);     // [2N]
    Var debiased_value = (R - pos * (tau_plus * M)) / (1.0 - tau_plus);
    Var clamp(Tensor::full({rows}, M * std::exp(-1.0 / t), u.dtype()));
    Var Ng = max(stack({debiased_value, clamp}, 1), 1);                     // the first maximum gets the gradient
    return mean(log(pos + Ng) - log(pos));
}

LossFunction hand_debiased(const DebiasedParameters& p) {
    return [=](const std::vector<Var>& in) { return debiased(in[0], in[1], p.t, p.tau_plus, p.beta); };
}
LossFunction composed_debiased(const DebiasedParameters& p, bool detach_importance = false) {
    return [=](const std::vector<Var>& in) { return composed_debiased(in[0], in[1], p, detach_importance); };
}

// N items seen twice. A share of the items (every third one) point near +e_0 and the rest
// near -e_0, so some rows see mostly far negatives and a close positive (the clamp can win)
// and the others close negatives (the debiased branch wins).
std::vector<Tensor> debiased_problem(Generator& generator, int64_t N, int64_t d, double noise) {
    Tensor direction = Tensor::zeros({N, d}, Dtype::Float64);
    for (int64_t i = 0; i < N; ++i) direction.data<double>()[i * d] = i % 3 == 0 ? 1.0 : -1.0;
    Tensor u = normalize_rows(direction + random_unit_rows(generator, N, d) * noise);
    Tensor v = normalize_rows(direction + random_unit_rows(generator, N, d) * noise);
    return {u, v};
}

// The margin by which each row's max is away from a tie, relative to the clamp value; the
// tests draw inputs with every row at least 1% away.
double smallest_branch_gap(const Tensor& u, const Tensor& v, const DebiasedParameters& parameters) {
    Tensor z = concat({u, v}, 0);
    auto dots = naive_dots(z, z);
    int64_t rows = z.size(0), N = rows / 2;
    Real M = rows - 2, t = parameters.t;
    Real smallest = INFINITY;
    for (int64_t i = 0; i < rows; ++i) {
        int64_t positive = (i + N) % rows;
        Real weighted = 0, weights = 0;
        for (int64_t j = 0; j < rows; ++j) {
            if (j == i || j == positive) continue;
            Real importance = std::exp(parameters.beta * dots[i][j] / t);
            weighted += importance * std::exp(dots[i][j] / t), weights += importance;
        }
        Real R = weighted / (weights / M), clamp = M * std::exp(-1 / t);
        Real pos = std::exp(dots[i][positive] / t);
        Real debiased_value = (R - parameters.tau_plus * M * pos) / (1 - parameters.tau_plus);
        smallest = std::min(smallest, std::fabs(debiased_value - clamp) / clamp);
    }
    return static_cast<double>(smallest);
}

TEST_CASE("debiased: hand backward equals finite differences, composition and naive forward, both branches") {
    Generator generator(421);
    double largest_error = 0;
    int clamped_rows = 0, debiased_rows = 0;
    for (auto [N, d] : {std::pair<int64_t, int64_t>{2, 3}, {4, 5}, {7, 8}}) {
        for (DebiasedParameters parameters : {DebiasedParameters{0.5, 0.1, 0.0}, {0.5, 0.1, 0.5}, {0.2, 0.0, 1.0},
                                              {0.3, 0.3, 2.0}, {1.0, 0.05, 0.0}}) {
            CAPTURE(N);
            CAPTURE(parameters.t);
            CAPTURE(parameters.tau_plus);
            CAPTURE(parameters.beta);
            std::vector<Tensor> inputs;
            for (int attempt = 0;; ++attempt) {  // away from a tie of the max
                REQUIRE(attempt < 1000);
                inputs = debiased_problem(generator, N, d, 0.6);
                if (smallest_branch_gap(inputs[0], inputs[1], parameters) > 0.01) break;
            }
            largest_error = std::max(largest_error, check_finite_differences(hand_debiased(parameters), inputs));
            check_matches_composition(hand_debiased(parameters), composed_debiased(parameters), inputs);
            NaiveDebiased naive = naive_debiased(inputs[0], inputs[1], parameters);
            Var loss = debiased(Var(inputs[0]), Var(inputs[1]), parameters.t, parameters.tau_plus, parameters.beta);
            CHECK(relative_error(loss.value().item(), naive.loss) < 1e-12);
            clamped_rows += naive.clamped_rows;
            debiased_rows += naive.debiased_rows;
        }
    }
    // Both branches of the max were exercised, with beta = 0 and beta > 0.
    CHECK(clamped_rows > 10);
    CHECK(debiased_rows > 10);
    MESSAGE("debiased: largest finite-difference error " << largest_error << " (" << clamped_rows << " clamped rows, "
                                                         << debiased_rows << " debiased rows)");
}

TEST_CASE("debiased: beta > 0 differentiates the importance weights (quotient rule)") {
    Generator generator(422);
    DebiasedParameters parameters{0.5, 0.1, 1.5};
    std::vector<Tensor> inputs = debiased_problem(generator, 5, 6, 1.0);
    REQUIRE(naive_debiased(inputs[0], inputs[1], parameters).debiased_rows > 0);
    check_finite_differences(hand_debiased(parameters), inputs);
    check_matches_composition(hand_debiased(parameters), composed_debiased(parameters), inputs);
    // Treating imp_ij as constants gives the same loss but a different gradient: the test
    // above would catch a backward that forgot d imp_ij / d z.
    LossAndGrads full = evaluate_loss(hand_debiased(parameters), inputs);
    LossAndGrads frozen = evaluate_loss(composed_debiased(parameters, /*detach_importance=*/true), inputs);
    CHECK(relative_error(frozen.loss, full.loss) < 1e-12);
    CHECK(relative_error(frozen.grads[0], full.grads[0]) > 1e-2);
}

TEST_CASE("debiased: rows on the clamp branch get gradient through pos_i only (closed form)") {
    Generator generator(423);
    // Every item's two views are close, and the items are nearly orthogonal (unit rows in 16
    // dimensions, 3 items): with t = 0.5, tau_plus = 0.4 every row has R_i < tau_plus M pos_i,
    // so Ng_i = C = M exp(-1/t) for every row and
    //   L = (1/2N) sum_i log(1 + C / pos_i) = (1/N) sum_k log(1 + C exp(-u_k·v_k/t))
    //   dL/du_k = -(1/N) q_k v_k / t,  dL/dv_k = -(1/N) q_k u_k / t,  q_k = C/(pos_k + C).
    DebiasedParameters parameters{0.5, 0.4, 0.7};
    int64_t N = 3, d = 16;
    Tensor u = random_unit_rows(generator, N, d), v = noisy_view(generator, u, 0.1);
    NaiveDebiased naive = naive_debiased(u, v, parameters);
    REQUIRE(naive.clamped_rows == 2 * N);
    double M = 2.0 * N - 2, C = M * std::exp(-1.0 / parameters.t);
    Tensor positives = sum(u * v, 1, /*keepdim=*/true) / parameters.t;                // u_k·v_k/t [N, 1]
    Tensor shares = 1.0 - exp(positives) / (exp(positives) + C);                       // q_k = C/(pos_k + C) [N, 1]
    double expected = sum(log(1.0 + exp(-positives) * C)).item() / static_cast<double>(N);
    LossAndGrads result = evaluate_loss(hand_debiased(parameters), {u, v});
    CHECK(relative_error(result.loss.item(), expected) < 1e-13);
    CHECK(relative_error(result.grads[0], -(shares * v) / (N * parameters.t)) < 1e-13);
    CHECK(relative_error(result.grads[1], -(shares * u) / (N * parameters.t)) < 1e-13);
    check_finite_differences(hand_debiased(parameters), {u, v});
}

TEST_CASE("debiased: tau_plus = 0 and beta = 0 is ntxent with the self-similarity masked") {
    Generator generator(424);
    // With tau_plus = 0, Ng_i = max(R_i, M exp(-1/t)), and R_i = sum_j ng_ij >= M exp(-1/t)
    // for unit rows (each z_i·z_j >= -1): L = (1/2N) sum_i -log(pos_i / (pos_i + sum_j ng_ij)),
    // which is ntxent(z = [u; v], tau = t, mask_self = 1).
    for (double t : {0.5, 0.1}) {
        Tensor u = random_unit_rows(generator, 4, 5), v = noisy_view(generator, u, 0.8);
        LossAndGrads ours = evaluate_loss(hand_debiased({t, 0.0, 0.0}), {u, v});
        LossAndGrads reference = evaluate_loss(
            [t](const std::vector<Var>& in) { return ntxent(concat({in[0], in[1]}, 0), Var(), t, true); }, {u, v});
        CHECK(relative_error(ours.loss, reference.loss) < 1e-13);
        CHECK(relative_error(ours.grads[0], reference.grads[0]) < 1e-12);
        CHECK(relative_error(ours.grads[1], reference.grads[1]) < 1e-12);
    }
}

TEST_CASE("debiased: t = 1e-4, identical rows and large embeddings stay finite and match the stable loops") {
    Generator generator(425);
    Tensor row = random_unit_rows(generator, 1, 5);
    Tensor same = concat({row, row, row}, 0);
    struct Case {
        const char* what;
        std::vector<Tensor> inputs;
        DebiasedParameters parameters;
    };
    std::vector<Tensor> mixed = debiased_problem(generator, 4, 5, 0.6);
    for (const Case& c : {Case{"t = 1e-4, beta 0", mixed, {1e-4, 0.1, 0.0}},
                          Case{"t = 1e-4, beta 3", mixed, {1e-4, 0.1, 3.0}},
                          Case{"t = 1e-3, tau_plus 0.5, beta 1", debiased_problem(generator, 5, 4, 0.3),
                               {1e-3, 0.5, 1.0}},
                          Case{"identical rows", {same, same}, {0.5, 0.1, 1.0}},
                          Case{"identical rows, t = 1e-4", {same, same}, {1e-4, 0.1, 2.0}},
                          Case{"embeddings of length 30", {mixed[0] * 30.0, mixed[1] * 30.0}, {0.5, 0.1, 0.5}}}) {
        CAPTURE(c.what);
        LossAndGrads result = evaluate_loss(hand_debiased(c.parameters), c.inputs);
        REQUIRE(all_grads_finite(result));
        CHECK(relative_error(result.loss.item(), naive_debiased(c.inputs[0], c.inputs[1], c.parameters).loss) < 1e-11);
    }
    // Identical rows: every z_i·z_j/t = 1/t. R_i = M exp(1/t), so with tau_plus = 0.1
    // Ng_i = (M exp(1/t) - 0.1 M exp(1/t))/0.9 = M exp(1/t) > M exp(-1/t): L = log(1 + M) exactly.
    LossAndGrads identical = evaluate_loss(hand_debiased({0.5, 0.1, 1.0}), {same, same});
    CHECK(relative_error(identical.loss.item(), std::log(1.0L + 4)) < 1e-14);
}

TEST_CASE("debiased: the clamp compares quantities on the same scale (every similarity far below -1/t)") {
    // Four rows at the corners of a regular tetrahedron, of length 3: every z_i·z_j = -3, so
    // with t = 0.5 every s_ij = -6, far below the clamp's exponent -1/t = -2. Then
    // pos_i = e^-6, R_i = M e^-6, the debiased branch is (M e^-6 - tau_plus M e^-6)/(1 - tau_plus)
    // = M e^-6 < M e^-2: the clamp wins and L = log(1 + M e^-2 / e^-6) = log(1 + 2 e^4).
    // Shifting pos and R by the row max e^6 without shifting M e^-2 would pick the other
    // branch and give log(1 + M) instead. Rows on the clamp get gradient only through
    // pos_i: dL/ds_i,p(i) = -q/(2N), q = C/(pos + C), so dL/dz_k = -(q/(2N)) 2 z_p(k) / t.
    double corner = 3.0 / std::sqrt(3.0);
    Tensor z = Tensor::from_vector({1, 1, 1, 1, -1, -1, -1, 1, -1, -1, -1, 1}, {4, 3}, Dtype::Float64) * corner;
    Tensor u = slice(z, 0, 0, 2), v = slice(z, 0, 2, 4);
    for (double beta : {0.0, 2.0}) {
        DebiasedParameters parameters{0.5, 0.1, beta};
        NaiveDebiased naive = naive_debiased(u, v, parameters);
        CHECK(naive.clamped_rows == 4);
        LossAndGrads result = evaluate_loss(hand_debiased(parameters), {u, v});
        Real expected = std::log(1 + 2 * std::exp(4.0L));
        CHECK(relative_error(result.loss.item(), expected) < 1e-14);
        CHECK(relative_error(result.loss.item(), naive.loss) < 1e-14);
        double q = 2 * std::exp(4.0) / (1 + 2 * std::exp(4.0));
        // dL/du_k = -(q/4)(2 v_k)/t, dL/dv_k = -(q/4)(2 u_k)/t  (each pair's s appears in rows k and k+N)
        CHECK(relative_error(result.grads[0], v * (-q / 4 * 2 / parameters.t)) < 1e-14);
        CHECK(relative_error(result.grads[1], u * (-q / 4 * 2 / parameters.t)) < 1e-14);
        check_finite_differences(hand_debiased(parameters), {u, v});
    }
}

TEST_CASE("debiased: bad inputs throw one line naming the input or parameter") {
    Generator generator(427);
    Var u(random_unit_rows(generator, 3, 4)), v(random_unit_rows(generator, 3, 4));
    CHECK_ERROR_MENTIONS(debiased(u, Var(random_unit_rows(generator, 4, 4))), "v [4, 4]");
    CHECK_ERROR_MENTIONS(debiased(Var(random_unit_rows(generator, 1, 4)), Var(random_unit_rows(generator, 1, 4))),
                         "N (rows of u, v; the other rows are the negatives) >= 2");
    CHECK_ERROR_MENTIONS(debiased(u, v, 0.0), "parameter t must be a finite number > 0");
    CHECK_ERROR_MENTIONS(debiased(u, v, 0.5, 1.0), "parameter tau_plus must be in [0, 1)");
    CHECK_ERROR_MENTIONS(debiased(u, v, 0.5, -0.1), "parameter tau_plus must be in [0, 1)");
    CHECK_ERROR_MENTIONS(debiased(u, v, 0.5, 0.1, -1.0), "parameter beta must be a finite number >= 0");
    CHECK_ERROR_MENTIONS(debiased(Var(u.value().to(Dtype::Float32)), v), "same dtype");
    Tensor with_nan = u.value().clone();
    with_nan.data<double>()[3] = NAN;
    CHECK_ERROR_MENTIONS(debiased(Var(with_nan), v), "u contains NaN");
}

// ---- megabatch_margin ------------------------------------------------------------------

// j*(i) = argmax over j != i of a_i·p_j, the lowest j on ties, by plain loops.
std::vector<int64_t> naive_hardest(const Tensor& a, const Tensor& p) {
    auto dots = naive_dots(a, p);
    int64_t N = a.size(0);
    std::vector<int64_t> hardest(static_cast<size_t>(N), -1);
    for (int64_t i = 0; i < N; ++i)
        for (int64_t j = 0; j < N; ++j)
            if (j != i && (hardest[i] < 0 || dots[i][j] > dots[i][hardest[i]])) hardest[i] = j;
    return hardest;
}

Real naive_megabatch(const Tensor& a, const Tensor& p, double pos_margin, double neg_margin) {
    auto dots = naive_dots(a, p);
    std::vector<int64_t> hardest = naive_hardest(a, p);
    int64_t N = a.size(0);
    Real total = 0;
    for (int64_t i = 0; i < N; ++i)
        total += std::max<Real>(pos_margin - dots[i][i], 0) + std::max<Real>(dots[i][hardest[i]] - neg_margin, 0);
    return total / N;
}

// The closed-form gradients in loops: dL/da_i = (-[h_i > 0] p_i + [k_i > 0] p_j*(i))/N,
// dL/dp_i = -[h_i > 0] a_i/N, and each row r adds [k_r > 0] a_r/N to dL/dp_j*(r).
std::vector<Tensor> naive_megabatch_gradients(const Tensor& a, const Tensor& p, double pos_margin,
                                              double neg_margin) {
    auto dots = naive_dots(a, p);
    std::vector<int64_t> hardest = naive_hardest(a, p);
    int64_t N = a.size(0), d = a.size(1);
    std::vector<double> A = a.to_vector(), P = p.to_vector(), da(A.size(), 0.0), dp(P.size(), 0.0);
    for (int64_t i = 0; i < N; ++i) {
        double positive_active = pos_margin - dots[i][i] > 0 ? 1.0 / N : 0.0;
        double negative_active = dots[i][hardest[i]] - neg_margin > 0 ? 1.0 / N : 0.0;
        for (int64_t k = 0; k < d; ++k) {
            da[i * d + k] += -positive_active * P[i * d + k] + negative_active * P[hardest[i] * d + k];
            dp[i * d + k] += -positive_active * A[i * d + k];
            dp[hardest[i] * d + k] += negative_active * A[i * d + k];
        }
    }
    return {Tensor::from_vector(da, a.shape(), Dtype::Float64), Tensor::from_vector(dp, p.shape(), Dtype::Float64)};
}

// The same loss from Var ops, the hardest negatives picked by the loops above and gathered
// with index_select (whose backward scatters into the chosen rows only).
Var composed_megabatch(const Var& a, const Var& p, double pos_margin, double neg_margin) {
    int64_t N = a.size(0);
    Tensor hardest = Tensor::from_indices(naive_hardest(a.value(), p.value()), {N});
    Var positive_hinge = relu(pos_margin - sum(a * p, 1));
    Var negative_hinge = relu(sum(a * index_select(p, hardest), 1) - neg_margin);
    return mean(positive_hinge + negative_hinge);
}

LossFunction hand_megabatch(double pos_margin, double neg_margin) {
    return [=](const std::vector<Var>& in) { return megabatch_margin(in[0], in[1], pos_margin, neg_margin); };
}
LossFunction composed_megabatch(double pos_margin, double neg_margin) {
    return [=](const std::vector<Var>& in) { return composed_megabatch(in[0], in[1], pos_margin, neg_margin); };
}

// Unit rows a and p (p a noisy copy of a), redrawn until every hinge is at least 0.03 from
// its kink and every row's best negative beats the runner-up by 0.03.
std::vector<Tensor> megabatch_problem(Generator& generator, int64_t N, int64_t d, double pos_margin,
                                      double neg_margin, double noise) {
    for (int attempt = 0; attempt < 10000; ++attempt) {
        Tensor a = random_unit_rows(generator, N, d), p = noisy_view(generator, a, noise);
        auto dots = naive_dots(a, p);
        bool smooth = true;
        for (int64_t i = 0; i < N && smooth; ++i) {
            Real best = -INFINITY, second = -INFINITY;
            for (int64_t j = 0; j < N; ++j) {
                if (j == i) continue;
                if (dots[i][j] > best) second = best, best = dots[i][j];
                else second = std::max(second, dots[i][j]);
            }
            smooth = std::fabs(pos_margin - dots[i][i]) > 0.03 && std::fabs(best - neg_margin) > 0.03 &&
                     best - second > 0.03;
        }
        if (smooth) return {a, p};
    }
    FAIL("no smooth megabatch_margin problem found");
    return {};
}

TEST_CASE("megabatch_margin: hand backward equals finite differences, composition, loops and naive forward") {
    Generator generator(431);
    double largest_error = 0;
    for (auto [N, d] : {std::pair<int64_t, int64_t>{2, 3}, {5, 4}, {8, 16}}) {
        for (auto [pos_margin, neg_margin] : {std::pair{0.8, 0.3}, {0.5, 0.0}, {1.0, 0.6}}) {
            CAPTURE(N);
            CAPTURE(pos_margin);
            CAPTURE(neg_margin);
            std::vector<Tensor> inputs = megabatch_problem(generator, N, d, pos_margin, neg_margin, 0.8);
            largest_error =
                std::max(largest_error, check_finite_differences(hand_megabatch(pos_margin, neg_margin), inputs));
            check_matches_composition(hand_megabatch(pos_margin, neg_margin),
                                      composed_megabatch(pos_margin, neg_margin), inputs);
            LossAndGrads result = evaluate_loss(hand_megabatch(pos_margin, neg_margin), inputs);
            CHECK(relative_error(result.loss.item(), naive_megabatch(inputs[0], inputs[1], pos_margin, neg_margin)) <
                  1e-13);
            std::vector<Tensor> expected = naive_megabatch_gradients(inputs[0], inputs[1], pos_margin, neg_margin);
            CHECK(relative_error(result.grads[0], expected[0]) < 1e-14);
            CHECK(relative_error(result.grads[1], expected[1]) < 1e-14);
            CHECK(hardest_negatives(inputs[0], inputs[1]) == naive_hardest(inputs[0], inputs[1]));
        }
    }
    MESSAGE("megabatch_margin: largest finite-difference error " << largest_error);
}

TEST_CASE("megabatch_margin: the negative term's gradient flows only through the chosen p_j*") {
    Generator generator(432);
    // pos_margin = 0 and a_i·p_i > 0 leave only the negative term. Then dL/dp_j is exactly
    // zero for every j that no row chose, and for a chosen j it is the sum of a_r/N over the
    // rows r that chose it (whose hinge is active).
    int64_t N = 6, d = 3;
    std::vector<Tensor> inputs;
    for (int attempt = 0;; ++attempt) {
        REQUIRE(attempt < 1000);
        inputs = megabatch_problem(generator, N, d, 0.0, 0.0, 0.3);
        std::vector<int64_t> hardest = naive_hardest(inputs[0], inputs[1]);
        std::vector<int64_t> distinct(hardest);
        std::sort(distinct.begin(), distinct.end());
        distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
        bool positives_positive = true;  // a_i·p_i > 0, so relu(0 - a_i·p_i) = 0
        for (double value : sum(inputs[0] * inputs[1], 1).to_vector())
            positives_positive = positives_positive && value > 0;
        if (positives_positive && static_cast<int64_t>(distinct.size()) < N) break;  // some p_j never chosen
    }
    std::vector<int64_t> hardest = hardest_negatives(inputs[0], inputs[1]);
    LossAndGrads result = evaluate_loss(hand_megabatch(0.0, 0.0), inputs);
    std::vector<double> dp = result.grads[1].to_vector(), a = inputs[0].to_vector();
    Tensor hardest_p = index_select(inputs[1], Tensor::from_indices(hardest, {N}));
    std::vector<double> hinge = sum(inputs[0] * hardest_p, 1).to_vector();  // a_i·p_j*(i), the negative hinge + 0
    int unchosen = 0;
    for (int64_t j = 0; j < N; ++j) {
        std::vector<double> expected(static_cast<size_t>(d), 0.0);
        bool chosen = false;
        for (int64_t r = 0; r < N; ++r)
            if (hardest[r] == j) {
                chosen = true;
                if (hinge[r] > 0)
                    for (int64_t k = 0; k < d; ++k) expected[k] += a[r * d + k] / N;
            }
        unchosen += chosen ? 0 : 1;
        for (int64_t k = 0; k < d; ++k) {
            CAPTURE(j);
            if (chosen) CHECK(std::fabs(dp[j * d + k] - expected[k]) < 1e-15);
            else CHECK(dp[j * d + k] == 0.0);  // exactly zero, not merely small
        }
    }
    CHECK(unchosen > 0);
}

TEST_CASE("megabatch_margin: ties pick the lowest j, and only it gets the gradient") {
    Generator generator(433);
    // p_1 = p_2: row 0 sees a tie between j = 1 and j = 2 and must pick 1.
    Tensor a = random_unit_rows(generator, 3, 4), p = random_unit_rows(generator, 3, 4);
    Tensor tied = concat({slice(p, 0, 0, 1), slice(p, 0, 1, 2), slice(p, 0, 1, 2)}, 0);
    // Make row 0's tied negative active and its positive inactive: a_0 close to p_1.
    Tensor a_tied = concat({normalize_rows(slice(p, 0, 1, 2) + slice(a, 0, 0, 1) * 0.1), slice(a, 0, 1, 3)}, 0);
    std::vector<int64_t> hardest = hardest_negatives(a_tied, tied);
    CHECK(hardest[0] == 1);
    CHECK(hardest == naive_hardest(a_tied, tied));
    // Row 0's pull goes to p_1 alone, never split with p_2: the loops, which pick the lowest j,
    // give the expected gradients exactly.
    LossAndGrads result = evaluate_loss(hand_megabatch(0.0, 0.0), {a_tied, tied});
    std::vector<Tensor> expected = naive_megabatch_gradients(a_tied, tied, 0.0, 0.0);
    CHECK(relative_error(result.grads[0], expected[0]) < 1e-15);
    CHECK(relative_error(result.grads[1], expected[1]) < 1e-15);
    // Identical rows everywhere: every row ties, j*(0) = 1 and j*(i) = 0 for i > 0.
    Tensor row = random_unit_rows(generator, 1, 4);
    Tensor same = concat({row, row, row, row}, 0);
    CHECK(hardest_negatives(same, same) == std::vector<int64_t>{1, 0, 0, 0});
    LossAndGrads identical = evaluate_loss(hand_megabatch(0.8, 0.3), {same, same});
    // Each hinge: relu(0.8 - 1) = 0 and relu(1 - 0.3) = 0.7, so L = 0.7; p_0 is chosen by
    // rows 1..3 and p_1 by row 0: dL/dp_0 = 3 row/4, dL/dp_1 = row/4, dL/dp_2 = dL/dp_3 = 0.
    CHECK(relative_error(identical.loss.item(), 0.7L) < 1e-15);
    CHECK(relative_error(slice(identical.grads[1], 0, 0, 1), row * 0.75) < 1e-15);
    CHECK(relative_error(slice(identical.grads[1], 0, 1, 2), row * 0.25) < 1e-15);
    CHECK(max_abs(slice(identical.grads[1], 0, 2, 4)) == 0.0);
    CHECK(relative_error(identical.grads[0], same * 0.25) < 1e-15);
}

TEST_CASE("megabatch_margin: large embeddings stay finite and match the composition") {
    Generator generator(434);
    std::vector<Tensor> inputs = megabatch_problem(generator, 5, 4, 0.8, 0.3, 0.8);
    for (Tensor& x : inputs) x = x * 1000.0;
    LossAndGrads result = evaluate_loss(hand_megabatch(0.8, 0.3), inputs);
    CHECK(all_grads_finite(result));
    check_matches_composition(hand_megabatch(0.8, 0.3), composed_megabatch(0.8, 0.3), inputs);
    CHECK(relative_error(result.loss.item(), naive_megabatch(inputs[0], inputs[1], 0.8, 0.3)) < 1e-13);
}

TEST_CASE("megabatch_margin: bad inputs throw one line naming the input or parameter") {
    Generator generator(435);
    Var a(random_unit_rows(generator, 3, 4)), p(random_unit_rows(generator, 3, 4));
    CHECK_ERROR_MENTIONS(megabatch_margin(a, Var(random_unit_rows(generator, 3, 2))), "p [3, 2]");
    CHECK_ERROR_MENTIONS(
        megabatch_margin(Var(random_unit_rows(generator, 1, 4)), Var(random_unit_rows(generator, 1, 4))),
        "N (rows of a, p; the other rows of p are the negatives) >= 2");
    CHECK_ERROR_MENTIONS(megabatch_margin(a, p, -0.1), "parameter pos_margin must be >= 0");
    CHECK_ERROR_MENTIONS(megabatch_margin(a, p, 0.8, -0.3), "parameter neg_margin must be >= 0");
    CHECK_ERROR_MENTIONS(megabatch_margin(a, Var(p.value().to(Dtype::Float32))), "same dtype");
    CHECK_ERROR_MENTIONS(megabatch_margin(Var(Tensor::zeros({3, 4, 1}, Dtype::Float64)), p), "a must be a matrix");
    Tensor with_nan = p.value().clone();
    with_nan.data<double>()[1] = NAN;
    CHECK_ERROR_MENTIONS(megabatch_margin(a, Var(with_nan)), "p contains NaN");
}

// ---- all four --------------------------------------------------------------------------

const char* const kNextPairwiseLosses[] = {"siglip", "dcl", "debiased", "megabatch_margin"};

TEST_CASE("next pairwise losses: float32 gives float32 results that agree with float64") {
    for (const char* name : kNextPairwiseLosses) {
        CAPTURE(name);
        const LossDefinition& definition = find_loss(name);
        Generator generator(441);
        std::map<std::string, Tensor> example = definition.example(generator, 5, 6);
        LossArguments arguments64 = make_arguments(definition, example, {});
        std::map<std::string, Tensor> example32;
        for (const auto& [input, value] : example)
            example32[input] = value.dtype() == Dtype::Int64 ? value : value.to(Dtype::Float32);
        LossArguments arguments32 = make_arguments(definition, example32, {});
        Var loss64 = definition.compute(arguments64), loss32 = definition.compute(arguments32);
        CHECK(loss32.dtype() == Dtype::Float32);
        CHECK(loss32.shape() == Shape{});
        CHECK(relative_error(loss32.value().item(), static_cast<Real>(loss64.value().item())) < 1e-5);
        loss64.backward();
        loss32.backward();
        for (const auto& [input, var] : arguments64.inputs) {
            CAPTURE(input);
            const Var& var32 = arguments32.inputs.at(input);
            REQUIRE(var.grad().defined());
            REQUIRE(var32.grad().defined());
            CHECK(var32.grad().dtype() == Dtype::Float32);
            CHECK(relative_error(var32.grad().to(Dtype::Float64), var.grad()) < 1e-4);
        }
    }
}

TEST_CASE("next pairwise losses: the definitions' examples pass finite differences, in both dtypes") {
    CheckRegistry registry;
    register_loss_checks(registry);
    for (const char* name : kNextPairwiseLosses) {
        int cases = 0;
        for (const CheckCase& check : registry.cases()) {
            if (check.op != name) continue;
            ++cases;
            for (Dtype dtype : testing::kFloatDtypes) {
                for (uint64_t seed : {1, 2, 3}) {
                    CAPTURE(name);
                    CAPTURE(check.description);
                    CAPTURE(dtype_name(dtype));
                    CAPTURE(seed);
                    GradcheckResult result = run_check(check, dtype, seed);
                    CAPTURE(result.max_rel_error);
                    CHECK(result.passed);
                }
            }
        }
        CHECK(cases == 2);
    }
}

TEST_CASE("next pairwise losses: the debiased and megabatch examples exercise their branches") {
    const LossDefinition& debiased_loss = find_loss("debiased");
    for (int64_t rows : {3, 6}) {
        for (uint64_t seed : {1, 2, 3, 442}) {  // the seeds the gradcheck test above draws with, and one more
            CAPTURE(rows);
            CAPTURE(seed);
            Generator generator(seed);
            std::map<std::string, Tensor> example = debiased_loss.example(generator, rows, 5);
            NaiveDebiased naive = naive_debiased(example.at("u"), example.at("v"), {0.5, 0.1, 0.0});
            CHECK(naive.clamped_rows > 0);
            CHECK(naive.debiased_rows > 0);
            CHECK(smallest_branch_gap(example.at("u"), example.at("v"), {0.5, 0.1, 0.0}) > 0.01);
        }
    }
    // megabatch_margin: no tie for the hardest negative and no hinge at its kink (0.03 away),
    // and over the draws both hinges are seen active and inactive.
    const LossDefinition& megabatch_loss = find_loss("megabatch_margin");
    int positive_active = 0, positive_inactive = 0, negative_active = 0, negative_inactive = 0;
    for (uint64_t seed : {1, 2, 3, 443}) {
        CAPTURE(seed);
        Generator generator(seed);
        std::map<std::string, Tensor> example = megabatch_loss.example(generator, 6, 5);
        const Tensor &a = example.at("a"), &p = example.at("p");
        auto dots = naive_dots(a, p);
        std::vector<int64_t> hardest = naive_hardest(a, p);
        for (int64_t i = 0; i < 6; ++i) {
            Real runner_up = -INFINITY;
            for (int64_t j = 0; j < 6; ++j)
                if (j != i && j != hardest[i]) runner_up = std::max(runner_up, dots[i][j]);
            Real positive_hinge = 0.8 - dots[i][i], negative_hinge = dots[i][hardest[i]] - 0.3;
            CHECK(dots[i][hardest[i]] - runner_up > 0.03);
            CHECK(std::fabs(positive_hinge) > 0.03);
            CHECK(std::fabs(negative_hinge) > 0.03);
            (positive_hinge > 0 ? positive_active : positive_inactive) += 1;
            (negative_hinge > 0 ? negative_active : negative_inactive) += 1;
        }
    }
    CHECK(positive_active > 0);
    CHECK(positive_inactive > 0);
    CHECK(negative_active > 0);
    CHECK(negative_inactive > 0);
}

TEST_CASE("next pairwise losses: definitions list the spec's inputs and defaults") {
    const LossDefinition& siglip_loss = find_loss("siglip");
    CHECK(siglip_loss.inputs.size() == 4);
    CHECK(siglip_loss.inputs[2].name == "log_scale");
    CHECK(siglip_loss.inputs[2].kind == InputKind::Scalar);
    CHECK(siglip_loss.inputs[3].name == "bias");
    CHECK(siglip_loss.params.empty());
    const LossDefinition& dcl_loss = find_loss("dcl");
    REQUIRE(dcl_loss.params.size() == 1);
    CHECK(dcl_loss.params[0].name == "tau");
    CHECK(dcl_loss.params[0].default_value == "0.1");
    const LossDefinition& debiased_loss = find_loss("debiased");
    REQUIRE(debiased_loss.params.size() == 3);
    CHECK(debiased_loss.params[0].default_value == "0.5");
    CHECK(debiased_loss.params[1].rule == ParamRule::UnitInterval);
    CHECK(debiased_loss.params[2].rule == ParamRule::NonNegative);
    const LossDefinition& megabatch_loss = find_loss("megabatch_margin");
    REQUIRE(megabatch_loss.params.size() == 2);
    CHECK(megabatch_loss.params[0].default_value == "0.8");
    CHECK(megabatch_loss.params[1].default_value == "0.3");
    // Through the registry, with --set values, the same numbers as the typed function.
    Generator generator(444);
    std::map<std::string, Tensor> example = debiased_loss.example(generator, 4, 5);
    LossArguments arguments = make_arguments(debiased_loss, example, {{"beta", "0.5"}, {"t", "0.3"}});
    Var through_registry = debiased_loss.compute(arguments);
    Var direct = debiased(Var(example.at("u")), Var(example.at("v")), 0.3, 0.1, 0.5);
    CHECK(through_registry.value().item() == direct.value().item());
    CHECK_ERROR_MENTIONS(make_arguments(debiased_loss, example, {{"tau_plus", "1"}}), "tau_plus");
}

}  // namespace pairwise_table2_tests
