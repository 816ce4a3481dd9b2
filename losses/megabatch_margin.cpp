#include "losses/megabatch_margin.h"

#include <cmath>
#include <limits>

#include "losses/loss_common.h"
#include "losses/random_inputs.h"
#include "losses/worked_example.h"

namespace nce::losses {
namespace {

constexpr const char* kMegabatchMargin = "megabatch_margin";

void check_megabatch_margin_inputs(const Var& a, const Var& p, double pos_margin, double neg_margin) {
    check_matrix(a, kMegabatchMargin, "a");
    check_matrix(p, kMegabatchMargin, "p");
    check_same_shape(a, p, kMegabatchMargin, "a", "p");
    NCE_CHECK(a.dtype() == p.dtype(), "{}: a is {} but p is {}; give both the same dtype", kMegabatchMargin,
              dtype_name(a.dtype()), dtype_name(p.dtype()));
    check_min_rows(a.size(0), 2, kMegabatchMargin, "N (rows of a, p; the other rows of p are the negatives)");
    NCE_CHECK(pos_margin >= 0 && std::isfinite(pos_margin), "{}: parameter pos_margin must be >= 0, got {}", kMegabatchMargin,
              pos_margin);
    NCE_CHECK(neg_margin >= 0 && std::isfinite(neg_margin), "{}: parameter neg_margin must be >= 0, got {}", kMegabatchMargin,
              neg_margin);
}

// j*(i) as an int64 tensor [N] on a's device.
Tensor hardest_negative_indices(const Tensor& a, const Tensor& p) {
    int64_t N = a.size(0);
    Tensor similarities = matmul(a, p, Transpose::Second);  // a p^T  [N, N]
    Tensor off_diagonal = 1.0 - identity_like(N, a);          // [N, N]
    // The diagonal at -inf can never be the max; max() returns the first maximum on ties.
    Tensor negatives = keep_where(similarities, off_diagonal, -std::numeric_limits<double>::infinity());
    return max(negatives, 1).indices;
}

}  // namespace

std::vector<int64_t> hardest_negatives(const Tensor& a, const Tensor& p) {
    return hardest_negative_indices(a, p).to_indices();
}

// MegaBatch margin.     a, p: [N, d]     j = j*(i), the hardest negative of row i
//   h_i = pos_margin - a_i·p_i          k_i = a_i·p_j - neg_margin            [N]
//   L = (1/N) sum_i [ relu(h_i) + relu(k_i) ]
//
// Backward (each step in docs/derivations/megabatch_margin.md). The argmax is a choice, not
// a function of a and p that varies smoothly: near a point without ties it stays fixed, so
// k_i depends on a_i and on p_j*(i) only, and no other p_j gets any gradient from it.
//   dL/dh_i = [h_i > 0] / N,   dL/dk_i = [k_i > 0] / N                    [N, 1]
//   dL/da_i = -dL/dh_i p_i + dL/dk_i p_j*(i)                               [N, d]
//   dL/dp_i = -dL/dh_i a_i + sum over rows r with j*(r) = i of dL/dk_r a_r
//   (a p_j chosen by several rows collects each of their pulls; with the matrix
//   H_rj = dL/dk_r [j = j*(r)]  [N, N], that sum is H^T · a)
// The node's output gradient dy (a scalar) multiplies each of them.
Var megabatch_margin(const Var& a, const Var& p, double pos_margin, double neg_margin) {
    check_megabatch_margin_inputs(a, p, pos_margin, neg_margin);
    int64_t N = a.size(0);
    const Tensor &av = a.value(), &pv = p.value();
    Tensor hardest = hardest_negative_indices(av, pv);                      // j*(i)  [N] int64
    Tensor hardest_p = index_select(pv, hardest);                           // p_j*(i)  [N, d]
    Tensor positive_hinge = pos_margin - sum(av * pv, 1);                   // h  [N]
    Tensor negative_hinge = sum(av * hardest_p, 1) - neg_margin;            // k  [N]
    Tensor loss = mean(relu(positive_hinge) + relu(negative_hinge));        // []

    // H_rj = dL/dk_r at j = j*(r), 0 elsewhere: routes each row's negative pull to its p_j*.
    // Row r of the identity picked at j*(r) is the one-hot of j*(r).
    Tensor negative_slope = hinge_slope(negative_hinge);                    // [N, 1]
    Tensor H = index_select(identity_like(N, av), hardest) * negative_slope;  // [N, N]

    return Var::from_op(kMegabatchMargin, std::move(loss), {a, p},
        [av, pv, hardest_p, positive_slope = hinge_slope(positive_hinge), negative_slope, H](
            const Tensor& dloss) -> Grads {
            double factor = dloss.item();
            Tensor da = (negative_slope * hardest_p - positive_slope * pv) * factor;    // [N, d]
            Tensor dp = (matmul(H, av, Transpose::First) - positive_slope * av) * factor;  // H^T·a - slope·a  [N, d]
            return {da, dp};
        });
}

LossDefinition megabatch_margin_definition() {
    LossDefinition loss;
    loss.name = kMegabatchMargin;
    loss.inputs = {{"a", InputKind::Embedding}, {"p", InputKind::Embedding}};
    loss.params = {{"pos_margin", "0.8", ParamRule::NonNegative, {}},
                   {"neg_margin", "0.3", ParamRule::NonNegative, {}}};
    loss.compute = [](const LossArguments& arguments) {
        return megabatch_margin(arguments.input("a"), arguments.input("p"), arguments.number("pos_margin"),
                                arguments.number("neg_margin"));
    };
    // max(rows, 2) pairs of unit rows, p_i a noisy copy of a_i, redrawn (up to 1000 times)
    // until, at the default margins, every hinge is at least 0.03 from its kink and every
    // row's hardest negative beats the runner-up by at least 0.03 (no ties in the argmax).
    loss.example = [](Generator& generator, int64_t rows, int64_t dim) {
        int64_t N = std::max<int64_t>(rows, 2);
        Tensor a, p;
        for (int attempt = 0; attempt < 1000; ++attempt) {
            a = random_unit_rows(generator, N, dim);
            p = a + random_unit_rows(generator, N, dim) * 0.9;
            p = p / sqrt(sum(p * p, 1, /*keepdim=*/true));
            std::vector<double> s = matmul(a, p, Transpose::Second).to_vector();  // [N, N]
            bool smooth = true;
            for (int64_t i = 0; i < N && smooth; ++i) {
                double best = -INFINITY, second = -INFINITY;
                for (int64_t j = 0; j < N; ++j) {
                    if (j == i) continue;
                    double value = s[i * N + j];
                    if (value > best) second = best, best = value;
                    else if (value > second) second = value;
                }
                smooth = std::abs(0.8 - s[i * N + i]) > 0.03 && std::abs(best - 0.3) > 0.03 &&
                         (N == 2 || best - second > 0.03);
            }
            if (smooth) break;
        }
        return std::map<std::string, Tensor>{{"a", a}, {"p", p}};
    };
    // The page's example: three pairs of unit rows (with two, each row's hardest negative would
    // be the only one). At the default margins each hinge is active in one row at least and
    // inactive in another, every hinge is 0.2 or more from its kink, and each row's hardest
    // negative beats the runner-up by 0.28 or more. Rows 0 and 2 both choose p_1, so p_1
    // collects two pulls.
    loss.worked_example = [] {
        WorkedExample example;
        example.inputs = {{"a", matrix({{1.0, 0.0}, {0.8, 0.6}, {0.0, 1.0}})},
                          {"p", matrix({{0.6, -0.8}, {0.8, 0.6}, {-0.8, 0.6}})}};
        example.steps = [](const LossArguments& arguments) {
            Tensor a = arguments.input("a").value(), p = arguments.input("p").value();
            double pos_margin = arguments.number("pos_margin"), neg_margin = arguments.number("neg_margin");
            int64_t N = a.size(0);
            Tensor S = matmul(a, p, Transpose::Second);                       // [N, N]
            Tensor negatives = keep_where(S, 1.0 - identity(N), -std::numeric_limits<double>::infinity());
            MaxResult hardest = max(negatives, 1);                            // [N] values, j*
            Tensor h = pos_margin - sum(S * identity(N), 1);                  // [N]
            Tensor k = hardest.values - neg_margin;                           // [N]
            Tensor dh = (step(h) / static_cast<double>(N)).reshape({N, 1});  // [N, 1]
            Tensor dk = (step(k) / static_cast<double>(N)).reshape({N, 1});  // [N, 1]
            Tensor chosen = index_select(identity(N), hardest.indices);       // [N, N], 1 at (i, j*(i))
            Tensor H = chosen * dk;                                           // [N, N]
            return std::vector<DerivationStep>{
                {"S", "a p^T", S},
                {"S off the diagonal", "the candidates for the hardest negative", negatives},
                {"j*", "argmax_{j != i} S_ij", hardest.indices},
                {"h", "pos_margin - S_ii", h},
                {"k", "S_i,j*(i) - neg_margin", k},
                {"relu(h) + relu(k)", "each row's term of the loss", relu(h) + relu(k)},
                {"dL/dh", "[h > 0] / N", dh.reshape({N})},
                {"dL/dk", "[k > 0] / N", dk.reshape({N})},
                {"H", "dL/dk_r at j = j*(r), 0 elsewhere", H},
                {"da", "dL/dk ⊙ p[j*] - dL/dh ⊙ p", dk * matmul(chosen, p) - dh * p},
                {"dp", "H^T a - dL/dh ⊙ a", matmul(H, a, Transpose::First) - dh * a}};
        };
        return example;
    };
    return loss;
}

}  // namespace nce::losses
