#include "losses/debiased.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "losses/loss_common.h"
#include "losses/random_inputs.h"
#include "losses/worked_example.h"

namespace nce::losses {
namespace {

constexpr const char* kLoss = "debiased";

double softplus(double x) { return std::max(x, 0.0) + std::log1p(std::exp(-std::abs(x))); }
double sigmoid(double x) {
    double e = std::exp(-std::abs(x));
    return x >= 0 ? 1.0 / (1.0 + e) : e / (1.0 + e);
}

// log sum_j exp(factor · s_j) over the negatives of a row, shifted by the largest term;
// `softmax` receives exp(factor · s_j - lse) for each negative (0 elsewhere).
double weighted_lse(const std::vector<double>& s, const std::vector<bool>& negative, double factor,
                    std::vector<double>& softmax) {
    double largest = -std::numeric_limits<double>::infinity();
    for (size_t j = 0; j < s.size(); ++j)
        if (negative[j]) largest = std::max(largest, factor * s[j]);
    double total = 0;
    for (size_t j = 0; j < s.size(); ++j)
        if (negative[j]) total += std::exp(factor * s[j] - largest);
    double lse = largest + std::log(total);
    softmax.assign(s.size(), 0.0);
    for (size_t j = 0; j < s.size(); ++j)
        if (negative[j]) softmax[j] = std::exp(factor * s[j] - lse);
    return lse;
}

struct Parameters {
    double t, tau_plus, beta;
};

// One row i of the loss, in the log domain relative to the positive: every quantity is a
// ratio to pos_i, so nothing overflows. s_j = z_i·z_j/t for j = 0..2N-1; j runs over the
// negatives (j not in {i, p(i)}).
//   log R_i = lse_j((1+beta) s_j) - lse_j(beta s_j) + log M         (R_i = M A_i / B_i)
//   log_R_over_pos = log R_i - s_p(i)
//   debiased branch: log(Ng_i/pos_i) = log_R_over_pos + log(1 - tau_plus M pos_i/R_i) - log(1 - tau_plus)
//                    (only when R_i > tau_plus M pos_i; otherwise that branch is <= 0 and the clamp wins)
//   clamp branch:    log(Ng_i/pos_i) = log M - 1/t - s_p(i)
//   log_Ng_over_pos = the larger of the two;  loss_i = log(1 + Ng_i/pos_i) = softplus(log_Ng_over_pos)
// The gradient of loss_i with respect to each s_j (derivation above `debiased`) goes into
// `row_gradient`.
double row_loss(const std::vector<double>& s, int64_t i, int64_t positive, const Parameters& parameters,
                std::vector<double>& row_gradient) {
    const double t = parameters.t, tau_plus = parameters.tau_plus, beta = parameters.beta;
    const size_t p = static_cast<size_t>(positive);
    double M = static_cast<double>(s.size()) - 2.0;
    std::vector<bool> negative(s.size(), true);
    negative[static_cast<size_t>(i)] = negative[p] = false;
    std::vector<double> w, r;  // w_j: softmax of (1+beta) s_j over the negatives; r_j: of beta s_j
    double log_R = weighted_lse(s, negative, 1.0 + beta, w) - weighted_lse(s, negative, beta, r) + std::log(M);
    double log_R_over_pos = log_R - s[p];

    // tau_plus M pos_i / R_i; exp may overflow to inf (R_i negligible next to pos_i): the
    // debiased branch is then unavailable, unless tau_plus = 0, where nothing is removed.
    double removed = tau_plus > 0 ? tau_plus * M * std::exp(-log_R_over_pos) : 0.0;
    double log_debiased = removed < 1.0 ? log_R_over_pos + std::log1p(-removed) - std::log1p(-tau_plus)
                                        : -std::numeric_limits<double>::infinity();
    double log_clamp = std::log(M) - 1.0 / t - s[p];  // log(M exp(-1/t) / pos_i): same scale as log_debiased
    bool clamped = !(log_debiased > log_clamp);
    double log_Ng_over_pos = clamped ? log_clamp : log_debiased;

    double negative_share = sigmoid(log_Ng_over_pos);   // q_i = Ng_i/(pos_i + Ng_i)
    double positive_share = sigmoid(-log_Ng_over_pos);  // a_i = pos_i/(pos_i + Ng_i)
    row_gradient.assign(s.size(), 0.0);
    row_gradient[p] = -negative_share;  // step 1: through pos_i directly
    if (!clamped) {
        row_gradient[p] -= tau_plus * M * positive_share / (1.0 - tau_plus);  // step 3: pos_i inside Ng_i
        // step 4: R_i / ((1 - tau_plus)(pos_i + Ng_i)), using log(pos_i + Ng_i) - s_p(i) = softplus(log_Ng_over_pos)
        double R_slope = std::exp(log_R_over_pos - softplus(log_Ng_over_pos)) / (1.0 - tau_plus);
        for (size_t j = 0; j < s.size(); ++j)
            if (negative[j]) row_gradient[j] = R_slope * ((1.0 + beta) * w[j] - beta * r[j]);
    }
    return softplus(log_Ng_over_pos);
}

void check_inputs(const Var& u, const Var& v, const Parameters& parameters) {
    check_matrix(u, kLoss, "u");
    check_matrix(v, kLoss, "v");
    check_same_shape(u, v, kLoss, "u", "v");
    NCE_CHECK(u.dtype() == v.dtype(), "{}: u is {} but v is {}; give both the same dtype", kLoss,
              dtype_name(u.dtype()), dtype_name(v.dtype()));
    check_min_rows(u.size(0), 2, kLoss, "N (rows of u, v; the other rows are the negatives)");
    NCE_CHECK(parameters.t > 0 && std::isfinite(parameters.t), "{}: parameter t must be a finite number > 0, got {}",
              kLoss, parameters.t);
    NCE_CHECK(parameters.tau_plus >= 0 && parameters.tau_plus < 1,
              "{}: parameter tau_plus must be in [0, 1), got {}", kLoss, parameters.tau_plus);
    NCE_CHECK(parameters.beta >= 0 && std::isfinite(parameters.beta),
              "{}: parameter beta must be a finite number >= 0, got {}", kLoss, parameters.beta);
}

}  // namespace

// Debiased contrastive loss.     z = [u; v]: [2N, d]    s = z z^T / t: [2N, 2N]    p(i) = (i+N) mod 2N
//   loss_i = log(pos_i + Ng_i) - log pos_i,   L = (1/2N) sum_i loss_i
//
// Backward (each step in docs/derivations/debiased.md), row i, writing
//   a_i = pos_i/(pos_i + Ng_i),  q_i = Ng_i/(pos_i + Ng_i) = 1 - a_i,
//   w_ij = softmax over negatives of (1+beta) s_ij,  r_ij = softmax over negatives of beta s_ij:
//   1. through pos_i alone (dpos_i/ds_ip(i) = pos_i):    dloss_i/ds_ip(i) = a_i - 1 = -q_i
//   2. clamp branch (Ng_i constant):                     nothing else
//      debiased branch, Ng_i = (R_i - tau_plus M pos_i)/(1 - tau_plus), dloss_i/dNg_i = 1/(pos_i + Ng_i):
//   3. via pos_i inside Ng_i:  dloss_i/ds_ip(i) += -tau_plus M a_i / (1 - tau_plus)
//   4. via R_i = M A_i/B_i with A_i = sum_j exp((1+beta) s_ij), B_i = sum_j exp(beta s_ij)
//      (quotient rule: the importance weights are differentiated too):
//        dR_i/ds_ij = R_i ( (1+beta) w_ij - beta r_ij )
//        dloss_i/ds_ij = R_i / ((1 - tau_plus)(pos_i + Ng_i)) · ( (1+beta) w_ij - beta r_ij )
//   G = dL/ds = (1/2N) [dloss_i/ds_ij]      [2N, 2N]  (zero on the diagonal)
//   dL/dz = (G + G^T) · z / t               [2N, 2N]·[2N, d]   (z appears as row and as column of s)
//   dL/du = rows 0..N-1 of dL/dz,  dL/dv = rows N..2N-1
// The node's output gradient dy (a scalar) multiplies each of them.
Var debiased(const Var& u, const Var& v, double t, double tau_plus, double beta) {
    Parameters parameters{t, tau_plus, beta};
    check_inputs(u, v, parameters);
    int64_t N = u.size(0), rows = 2 * N;
    Tensor z = concat({u.value(), v.value()}, 0);                       // [2N, d]
    Tensor logits = matmul(z, z, Transpose::Second) / t;                // s [2N, 2N]
    std::vector<double> all_logits = logits.to_vector(), gradient(static_cast<size_t>(rows * rows));

    double loss_sum = 0;
    std::vector<double> row_logits, row_gradient;
    for (int64_t i = 0; i < rows; ++i) {
        row_logits.assign(all_logits.begin() + i * rows, all_logits.begin() + (i + 1) * rows);
        loss_sum += row_loss(row_logits, i, (i + N) % rows, parameters, row_gradient);
        for (int64_t j = 0; j < rows; ++j) gradient[i * rows + j] = row_gradient[j] / static_cast<double>(rows);
    }
    Tensor loss = Tensor::scalar(loss_sum / static_cast<double>(rows), u.dtype());
    Tensor G = Tensor::from_vector(gradient, {rows, rows}, u.dtype());  // dL/ds [2N, 2N]

    return Var::from_op(kLoss, std::move(loss), {u, v},
        [z, G_plus_G_transposed = G + transpose(G, 0, 1), t, N](const Tensor& dloss) -> Grads {
            Tensor dz = matmul(G_plus_G_transposed, z) * (dloss.item() / t);  // [2N, d]
            return {slice(dz, 0, 0, N), slice(dz, 0, N, 2 * N)};
        });
}

LossDefinition debiased_definition() {
    LossDefinition loss;
    loss.name = kLoss;
    loss.inputs = {{"u", InputKind::Embedding}, {"v", InputKind::Embedding}};
    loss.params = {{"t", "0.5", ParamRule::Positive, {}},
                   {"tau_plus", "0.1", ParamRule::UnitInterval, {}},
                   {"beta", "0.0", ParamRule::NonNegative, {}}};
    loss.compute = [](const LossArguments& arguments) {
        return debiased(arguments.input("u"), arguments.input("v"), arguments.number("t"),
                        arguments.number("tau_plus"), arguments.number("beta"));
    };
    // max(rows, 2) items seen twice, so that both branches of the max appear at the default
    // parameters: item 0 points along +e_0 and every other item near -e_0 (with noise).
    // Item 0's rows see only far negatives (small R) and a close positive: the clamp wins.
    // The other rows see close negatives (large R): the debiased branch wins.
    loss.example = [](Generator& generator, int64_t rows, int64_t dim) {
        int64_t N = std::max<int64_t>(rows, 2);
        Tensor direction = Tensor::zeros({N, dim}, Dtype::Float64);
        for (int64_t i = 0; i < N; ++i) direction.data<double>()[i * dim] = i == 0 ? 1.0 : -1.0;
        auto noisy = [&](double noise) {
            Tensor x = direction + random_unit_rows(generator, N, dim) * noise;
            return x / sqrt(sum(x * x, 1, /*keepdim=*/true));
        };
        return std::map<std::string, Tensor>{{"u", noisy(0.5)}, {"v", noisy(0.5)}};
    };
    // The page's example: two items seen twice as unit rows, each pair at a cosine of 0.6, with
    // beta = 0.5 so that the importance weights (and the quotient rule) take part. Rows 0 and 3
    // see only far negatives and take the clamp; rows 1 and 2 have a negative at 0.28 and take
    // the debiased branch, each by a wide gap. Plain exp (no log domain): at t = 0.5 nothing
    // comes near overflow.
    loss.worked_example = [] {
        WorkedExample example;
        example.inputs = {{"u", matrix({{1.0, 0.0}, {-0.6, 0.8}})}, {"v", matrix({{0.6, 0.8}, {-1.0, 0.0}})}};
        example.params = {{"beta", "0.5"}};
        example.steps = [](const LossArguments& arguments) {
            Tensor u = arguments.input("u").value(), v = arguments.input("v").value();
            double t = arguments.number("t"), tau_plus = arguments.number("tau_plus"), beta = arguments.number("beta");
            int64_t N = u.size(0), rows = 2 * N;
            double M = static_cast<double>(rows - 2);
            Tensor zero = Tensor::zeros({N, N}, Dtype::Float64);
            // 1 at (i, p(i)), and 1 at every negative (j not in {i, p(i)})      [2N, 2N] each
            Tensor positive_mask = concat({concat({zero, identity(N)}, 1), concat({identity(N), zero}, 1)}, 0);
            Tensor negative_mask = 1.0 - identity(rows) - positive_mask;
            auto row_of = [&](const Tensor& x) { return x.reshape({rows}); };

            Tensor z = concat({u, v}, 0);                                   // [2N, d]
            Tensor s = matmul(z, z, Transpose::Second) / t;                 // [2N, 2N]
            Tensor pos = sum(exp(s) * positive_mask, 1, /*keepdim=*/true);  // [2N, 1]
            Tensor weighted = exp(s * (1.0 + beta)) * negative_mask;        // imp ⊙ ng   [2N, 2N]
            Tensor importance = exp(s * beta) * negative_mask;              // imp        [2N, 2N]
            Tensor A = sum(weighted, 1, /*keepdim=*/true), B = sum(importance, 1, /*keepdim=*/true);  // [2N, 1]
            Tensor R = A / B * M;                                           // [2N, 1]
            Tensor debiased_branch = (R - pos * (tau_plus * M)) / (1.0 - tau_plus);  // [2N, 1]
            double clamp = M * std::exp(-1.0 / t);
            Tensor on_debiased = greater(debiased_branch, full_like(debiased_branch, clamp));  // [2N, 1]: 1 or 0
            Tensor Ng = maximum(debiased_branch, full_like(debiased_branch, clamp));           // [2N, 1]
            Tensor a = pos / (pos + Ng), q = Ng / (pos + Ng);                                   // [2N, 1]
            Tensor w = weighted / A, r = importance / B;                                        // [2N, 2N]

            // Steps 1 and 3 (through pos_i) land on the positive; step 4 (through R_i) on the negatives.
            Tensor through_pos = positive_mask * (-q - on_debiased * a * (tau_plus * M / (1.0 - tau_plus)));
            Tensor R_slope = on_debiased * R / ((pos + Ng) * (1.0 - tau_plus));  // [2N, 1], 0 on the clamp
            Tensor through_R = R_slope * (w * (1.0 + beta) - r * beta);          // [2N, 2N]
            Tensor G = (through_pos + through_R) / static_cast<double>(rows);  // [2N, 2N]
            Tensor dz = matmul(G + transpose(G, 0, 1), z) / t;                // [2N, d]
            return std::vector<DerivationStep>{
                {"z", "[u; v]", z},
                {"s", "z z^T / t", s},
                {"pos", "exp(s_i,p(i)), p(i) = (i + N) mod 2N", row_of(pos)},
                {"A", "sum over negatives j of exp((1+beta) s_ij)", row_of(A)},
                {"B", "sum over negatives j of exp(beta s_ij)", row_of(B)},
                {"R", "M A / B", row_of(R)},
                {"debiased branch", "(R - tau_plus M pos) / (1 - tau_plus)", row_of(debiased_branch)},
                {"clamp branch", "M exp(-1/t)", Tensor::scalar(clamp, Dtype::Float64)},
                {"on the debiased branch", "1 where it beats the clamp", row_of(on_debiased)},
                {"Ng", "the larger of the two branches", row_of(Ng)},
                {"loss_i", "log(pos + Ng) - log pos", row_of(log(pos + Ng) - log(pos))},
                {"a", "pos / (pos + Ng)", row_of(a)},
                {"q", "Ng / (pos + Ng) = 1 - a", row_of(q)},
                {"w", "exp((1+beta) s_ij) / A_i over the negatives", w},
                {"r", "exp(beta s_ij) / B_i over the negatives", r},
                {"G", "(1/2N) dloss_i/ds_ij, steps 1-4", G},
                {"dz", "(G + G^T) z / t", dz},
                {"du", "rows 0..N-1 of dz", slice(dz, 0, 0, N)},
                {"dv", "rows N..2N-1 of dz", slice(dz, 0, N, rows)}};
        };
        return example;
    };
    return loss;
}

}  // namespace nce::losses
