#include "losses/debiased.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "losses/loss_common.h"
#include "losses/random_inputs.h"
#include "losses/softplus.h"
#include "losses/worked_example.h"

namespace nce::losses {
namespace {

constexpr const char* kDebiased = "debiased";

struct Parameters {
    double t, tau_plus, beta;
};

// Which entries of a row of s = z z^T / t play which part, p(i) = (i + N) mod 2N; made on
// like's device, in its dtype.   [2N, 2N] each
struct RowMasks {
    Tensor positive;  // 1 at (i, p(i)): [[0, I], [I, 0]]
    Tensor negative;  // 1 at every j not in {i, p(i)}: the M = 2N - 2 negatives of row i
};

RowMasks row_masks(int64_t N, const Tensor& like) {
    Tensor identity = identity_like(N, like), zero = zeros_like(identity);  // [N, N]
    Tensor positive = concat({concat({zero, identity}, 1), concat({identity, zero}, 1)}, 0);
    return {positive, 1.0 - identity_like(2 * N, like) - positive};
}

// Row by row over the negatives of s, with the log-sum-exp shifted by the row's largest
// term (no exponent is positive):
//   lse_i = log sum_j exp(factor · s_ij)   [2N, 1]      softmax_ij = exp(factor · s_ij - lse_i)   [2N, 2N]
// (0 off the negatives: they are -inf before the exp).
struct NegativesLse {
    Tensor lse, softmax;
};

NegativesLse negatives_lse(const Tensor& s, const Tensor& negative, double factor) {
    Tensor terms = keep_where(s * factor, negative, -std::numeric_limits<double>::infinity());  // [2N, 2N]
    Tensor largest = max(terms, 1, /*keepdim=*/true).values;                                    // [2N, 1]
    Tensor shifted = exp(terms - largest);                                                      // [2N, 2N]
    Tensor total = sum(shifted, 1, /*keepdim=*/true);                                           // [2N, 1], >= 1
    return {largest + log(total), shifted / total};
}

// where(mask, a, b) for a 0/1 mask: an infinite a or b where it is not chosen stays out.
Tensor choose(const Tensor& mask, const Tensor& a, const Tensor& b) {
    return keep_where(a, mask, 0.0) + keep_where(b, 1.0 - mask, 0.0);
}

void check_debiased_inputs(const Var& u, const Var& v, const Parameters& parameters) {
    check_matrix(u, kDebiased, "u");
    check_matrix(v, kDebiased, "v");
    check_same_shape(u, v, kDebiased, "u", "v");
    NCE_CHECK(u.dtype() == v.dtype(), "{}: u is {} but v is {}; give both the same dtype", kDebiased,
              dtype_name(u.dtype()), dtype_name(v.dtype()));
    check_min_rows(u.size(0), 2, kDebiased, "N (rows of u, v; the other rows are the negatives)");
    NCE_CHECK(parameters.t > 0 && std::isfinite(parameters.t), "{}: parameter t must be a finite number > 0, got {}",
              kDebiased, parameters.t);
    NCE_CHECK(parameters.tau_plus >= 0 && parameters.tau_plus < 1,
              "{}: parameter tau_plus must be in [0, 1), got {}", kDebiased, parameters.tau_plus);
    NCE_CHECK(parameters.beta >= 0 && std::isfinite(parameters.beta),
              "{}: parameter beta must be a finite number >= 0, got {}", kDebiased, parameters.beta);
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
//
// All rows at once, as tensors on the inputs' device, in the log domain relative to the
// positive: every quantity is a ratio to pos_i, so nothing overflows even at t = 1e-4
// (docs/derivations/debiased.md, Stability). All [2N, 1] but w, r and G:
//   log R_i = lse_j((1+beta) s_ij) - lse_j(beta s_ij) + log M         (R_i = M A_i / B_i)
//   log_R_over_pos = log R_i - s_ip(i)
//   debiased branch: log(Ng_i/pos_i) = log_R_over_pos + log1p(-tau_plus M pos_i/R_i) - log1p(-tau_plus)
//                    (only when R_i > tau_plus M pos_i; otherwise it is -inf: that branch is <= 0 and the clamp wins)
//   clamp branch:    log(Ng_i/pos_i) = log M - 1/t - s_ip(i)
//   log_Ng_over_pos = the larger of the two;   loss_i = log(1 + Ng_i/pos_i) = softplus(log_Ng_over_pos)
//   q_i = sigmoid(log_Ng_over_pos),  a_i = sigmoid(-log_Ng_over_pos)
//   R_i / (pos_i + Ng_i) = exp(log_R_over_pos - softplus(log_Ng_over_pos))
Var debiased(const Var& u, const Var& v, double t, double tau_plus, double beta) {
    Parameters parameters{t, tau_plus, beta};
    check_debiased_inputs(u, v, parameters);
    int64_t N = u.size(0), rows = 2 * N;
    const double M = static_cast<double>(rows - 2), minus_infinity = -std::numeric_limits<double>::infinity();
    Tensor z = concat({u.value(), v.value()}, 0);                        // [2N, d]
    Tensor logits = matmul(z, z, Transpose::Second) / t;                 // s [2N, 2N]
    RowMasks masks = row_masks(N, logits);
    Tensor positive_logit = sum(keep_where(logits, masks.positive, 0.0), 1, /*keepdim=*/true);  // s_ip(i) [2N, 1]
    NegativesLse w = negatives_lse(logits, masks.negative, 1.0 + beta);  // w_ij and log A_i
    NegativesLse r = negatives_lse(logits, masks.negative, beta);        // r_ij and log B_i
    Tensor log_R_over_pos = w.lse - r.lse + std::log(M) - positive_logit;  // log(R_i / pos_i)   [2N, 1]

    // tau_plus M pos_i / R_i; exp may overflow to inf (R_i negligible next to pos_i): the
    // debiased branch is then unavailable. With tau_plus = 0 nothing is removed.
    Tensor log_debiased = log_R_over_pos;
    if (tau_plus > 0) {
        Tensor removed = exp(-log_R_over_pos) * (tau_plus * M);                 // [2N, 1]
        Tensor available = greater(full_like(removed, 1.0), removed);           // 1 where removed < 1
        Tensor log1p_removed = log_one_plus(-keep_where(removed, available, 0.0));
        log_debiased = keep_where(log_R_over_pos + log1p_removed - std::log1p(-tau_plus), available, minus_infinity);
    }
    Tensor log_clamp = (std::log(M) - 1.0 / t) - positive_logit;  // log(M exp(-1/t) / pos_i): same scale as log_debiased
    Tensor on_debiased = greater(log_debiased, log_clamp);        // 1 on the debiased branch, 0 on the clamp   [2N, 1]
    Tensor log_Ng_over_pos = choose(on_debiased, log_debiased, log_clamp);
    Tensor log_total_over_pos = softplus(log_Ng_over_pos);        // loss_i = log((pos_i + Ng_i) / pos_i)
    Tensor loss = sum(log_total_over_pos) / static_cast<double>(rows);  // []

    Tensor negative_share = sigmoid(log_Ng_over_pos);   // q_i = Ng_i/(pos_i + Ng_i)
    Tensor positive_share = sigmoid(-log_Ng_over_pos);  // a_i = pos_i/(pos_i + Ng_i)
    // Steps 1 and 3 land on the positive column; step 3 only on the debiased branch.
    Tensor through_pos = masks.positive * (-negative_share - keep_where(positive_share, on_debiased, 0.0) *
                                                                 (tau_plus * M / (1.0 - tau_plus)));  // [2N, 2N]
    // Step 4, on the negatives, debiased branch only: R_i / ((1 - tau_plus)(pos_i + Ng_i)) ((1+beta) w_ij - beta r_ij)
    Tensor R_slope = keep_where(exp(log_R_over_pos - log_total_over_pos) / (1.0 - tau_plus), on_debiased, 0.0);
    Tensor through_R = R_slope * (w.softmax * (1.0 + beta) - r.softmax * beta);  // [2N, 2N]
    Tensor G = (through_pos + through_R) / static_cast<double>(rows);            // dL/ds [2N, 2N]

    return Var::from_op(kDebiased, std::move(loss), {u, v},
        [z, G_plus_G_transposed = G + transpose(G, 0, 1), t, N](const Tensor& dloss) -> Grads {
            Tensor dz = matmul(G_plus_G_transposed, z) * (dloss.item() / t);  // [2N, d]
            return {slice(dz, 0, 0, N), slice(dz, 0, N, 2 * N)};
        });
}

LossDefinition debiased_definition() {
    LossDefinition loss;
    loss.name = kDebiased;
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
