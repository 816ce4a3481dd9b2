#include "losses/gist.h"

#include <cmath>
#include <limits>

#include "losses/loss_common.h"
#include "losses/random_inputs.h"
#include "losses/worked_example.h"

namespace nce::losses {
namespace {

constexpr const char* kGist = "gist";

void check_gist_inputs(const Var& a, const Var& p, const Var& ga, const Var& gp, double tau, double margin) {
    check_matrix(a, kGist, "a");
    check_matrix(p, kGist, "p");
    check_matrix(ga, kGist, "ga");
    check_matrix(gp, kGist, "gp");
    check_same_shape(a, p, kGist, "a", "p");
    check_same_shape(ga, gp, kGist, "ga", "gp");
    NCE_CHECK(ga.size(0) == a.size(0),
              "{}: ga {} must have one row per row of a {} (the guide embeds the same {} pairs)", kGist,
              shape_string(ga.shape()), shape_string(a.shape()), a.size(0));
    NCE_CHECK(p.dtype() == a.dtype() && ga.dtype() == a.dtype() && gp.dtype() == a.dtype(),
              "{}: a ({}), p ({}), ga ({}) and gp ({}) must have the same dtype", kGist, dtype_name(a.dtype()),
              dtype_name(p.dtype()), dtype_name(ga.dtype()), dtype_name(gp.dtype()));
    check_min_rows(a.size(0), 2, kGist, "N (rows of a; the other rows are the negatives)");
    NCE_CHECK(tau > 0 && std::isfinite(tau), "{}: parameter tau must be a finite number > 0, got {}", kGist, tau);
    NCE_CHECK(margin >= 0 && std::isfinite(margin), "{}: parameter margin must be a finite number >= 0, got {}", kGist,
              margin);
}

// 1 where an entry of a block stays in the softmax, 0 where the guide masks it    [N, N]
//   masked when guide_similarities_ij > thresholds_i;  the diagonal is set to `diagonal`
//   (every value is 0 or 1, so the products and the sum are exact).
Tensor kept_entries(const Tensor& guide_similarities, const Tensor& thresholds, const Tensor& identity,
                    double diagonal) {
    int64_t rows = guide_similarities.size(0);
    Tensor keep = 1.0 - greater(guide_similarities, thresholds.reshape({rows, 1}));  // [N, N]
    return keep * (1.0 - identity) + identity * diagonal;
}

}  // namespace

GistStrategy parse_gist_strategy(const std::string& text) {
    if (text == "absolute") return GistStrategy::Absolute;
    if (text == "relative") return GistStrategy::Relative;
    fail("gist: parameter strategy must be absolute or relative, got '{}'", text);
}

// GIST.     a, p: [N, d]     ga, gp: [N, d_guide] (constants)
//   theta_i = ga_i·gp_i                                  [N]
//   threshold_i = theta_i - margin  or  theta_i (1 - margin)
//   keep: 1 where the block's guide similarity <= threshold_i (AP diagonal 1, AA and PP diagonals 0)
//   l = [ a p^T | a a^T | p p^T ] / tau, masked entries -inf     [N, 3N]
//   L = (1/N) sum_i ( lse_j l_ij - l_ii )                      the positive of row i is column i (AP_ii)
//
// Backward:
//   dL/dl = G = (P - Y) / N       [N, 3N]   P = softmax rows of l (0 on masked entries), Y one-hot at column i
//   split G = [ G_ap | G_aa | G_pp ], each [N, N]
//   AP_ij = a_i·p_j / tau:  dAP gives  G_ap · p / tau to a  and  G_ap^T · a / tau to p
//   AA_ij = a_i·a_j / tau:  a_k appears as the row (i = k) and as the column (j = k), so
//                           dL/da gets (G_aa + G_aa^T) · a / tau
//   PP_ij = p_i·p_j / tau:  likewise dL/dp gets (G_pp + G_pp^T) · p / tau
//   dL/da = ( G_ap · p + (G_aa + G_aa^T) · a ) / tau            [N, d]
//   dL/dp = ( G_ap^T · a + (G_pp + G_pp^T) · p ) / tau          [N, d]
//   dL/dga = 0, dL/dgp = 0: they only move the mask, which is piecewise constant.
Var gist(const Var& a, const Var& p, const Var& ga, const Var& gp, double tau, double margin, GistStrategy strategy) {
    check_gist_inputs(a, p, ga, gp, tau, margin);
    int64_t N = a.size(0);
    const Tensor &av = a.value(), &pv = p.value(), &gav = ga.value(), &gpv = gp.value();

    Tensor I = identity_like(N, av);                                                                 // [N, N]
    Tensor theta = sum(gav * gpv, 1);                                                                 // [N]
    Tensor thresholds = strategy == GistStrategy::Absolute ? theta - margin : theta * (1.0 - margin);  // [N]
    Tensor keep = concat({kept_entries(matmul(gav, gpv, Transpose::Second), thresholds, I, 1.0),   // AP
                          kept_entries(matmul(gav, gav, Transpose::Second), thresholds, I, 0.0),   // AA
                          kept_entries(matmul(gpv, gpv, Transpose::Second), thresholds, I, 0.0)},  // PP
                         1);                                                                         // [N, 3N]
    Tensor logits = concat({matmul(av, pv, Transpose::Second), matmul(av, av, Transpose::Second),
                            matmul(pv, pv, Transpose::Second)},
                           1) * (1.0 / tau);                                                         // [N, 3N]
    logits = keep_where(logits, keep, -std::numeric_limits<double>::infinity());

    // Row i's positive is column i (AP_ii, never masked): Y is one-hot there.   [N, 3N]
    // lse_j l_ij - l_ii = -log P_ii, with log P from log_softmax (each row shifted by its max,
    // so no exponent is positive; a masked entry has log P = -inf and P = 0).
    Tensor Y = concat({I, zeros_like(I), zeros_like(I)}, 1);
    Tensor log_probabilities = log_softmax(logits);                                                  // [N, 3N]
    Tensor positive_log_probabilities = sum(keep_where(log_probabilities, Y, 0.0), 1);  // log P_ii  [N]
    // Summed over the rows in float64: a float32 loss is rounded once, at the end.
    Tensor loss = (-sum(positive_log_probabilities.to(Dtype::Float64)) / static_cast<double>(N)).to(a.dtype());  // []
    // dL/dl [N, 3N]; exactly 0 at the masked entries, whose probability is exp(-inf) = 0.
    Tensor G = (exp(log_probabilities) - Y) / static_cast<double>(N);

    return Var::from_op(kGist, std::move(loss), {a, p, ga, gp},
        [av, pv, G, N, inverse_tau = 1.0 / tau, guide_shape = ga.shape(), guide_dtype = ga.dtype(),
         guide_device = ga.value().device()](
            const Tensor& dy) -> Grads {
            Tensor G_ap = slice(G, 1, 0, N), G_aa = slice(G, 1, N, 2 * N), G_pp = slice(G, 1, 2 * N, 3 * N);
            double scale = dy.item() * inverse_tau;
            // [N, d] each
            Tensor da = (matmul(G_ap, pv) + matmul(G_aa + transpose(G_aa, 0, 1), av)) * scale;
            Tensor dp = (matmul(G_ap, av, Transpose::First) + matmul(G_pp + transpose(G_pp, 0, 1), pv)) * scale;
            Tensor zero_guide = Tensor::zeros(guide_shape, guide_dtype, guide_device);  // ga and gp share a shape
            return {da, dp, zero_guide, zero_guide.clone()};
        });
}

LossDefinition gist_definition() {
    LossDefinition loss;
    loss.name = kGist;
    loss.inputs = {{"a", InputKind::Embedding},
                   {"p", InputKind::Embedding},
                   {"ga", InputKind::Guide},
                   {"gp", InputKind::Guide}};
    loss.params = {{"tau", "0.01", ParamRule::Positive, {}},
                   {"margin", "0.0", ParamRule::NonNegative, {}},
                   {"strategy", "absolute", ParamRule::Choice, {"absolute", "relative"}}};
    loss.compute = [](const LossArguments& arguments) {
        return gist(arguments.input("a"), arguments.input("p"), arguments.input("ga"), arguments.input("gp"),
                    arguments.number("tau"), arguments.number("margin"),
                    parse_gist_strategy(arguments.text("strategy")));
    };
    // Pairs that belong together: p_i is a_i plus noise; the guide sees each row through more
    // noise. a and p have length 0.3, so at the default tau = 0.01 the logits lie within ±9:
    // with unit rows they reach ±100, the softmax saturates, and the gradients (of the size of
    // exp(-50)) are below what finite differences can resolve. The guides are unit rows.
    // Rows 0 and 1 get the same guide anchor (a duplicate question to the guide), so
    // ga_0·ga_1 = 1 > theta_0: at least the AA entries (0,1) and (1,0) are masked, whatever the draw.
    loss.example = [](Generator& generator, int64_t rows, int64_t dim) {
        auto normalised = [](const Tensor& x) { return x / sqrt(sum(x * x, 1, /*keepdim=*/true)); };
        Tensor unit_a = random_unit_rows(generator, rows, dim);
        Tensor unit_p = normalised(unit_a + random_unit_rows(generator, rows, dim) * 0.8);
        Tensor a = unit_a * 0.3, p = unit_p * 0.3;
        Tensor ga = normalised(unit_a + random_unit_rows(generator, rows, dim) * 0.3);
        Tensor gp = normalised(unit_p + random_unit_rows(generator, rows, dim) * 0.3);
        Tensor first_anchor = slice(ga, 0, 0, 1);
        std::vector<Tensor> anchors{first_anchor, first_anchor};
        if (rows > 2) anchors.push_back(slice(ga, 0, 2, rows));
        ga = concat(anchors, 0);
        return std::map<std::string, Tensor>{{"a", a}, {"p", p}, {"ga", ga}, {"gp", gp}};
    };
    // The page's example: two pairs of unit rows at tau 0.5, margin 0 (absolute). The guide
    // finds p_0 closer to a_1 (ga_1·gp_0 = 0.96) than a_1's own positive (theta_1 = 0.8), so
    // AP_10 is masked as a false negative; every other off-diagonal entry (guide
    // similarities 0 and 0.6) is kept.
    loss.worked_example = [] {
        WorkedExample example;
        example.inputs = {{"a", matrix({{0.6, 0.8}, {1.0, 0.0}})},
                          {"p", matrix({{0.8, 0.6}, {0.0, 1.0}})},
                          {"ga", matrix({{1.0, 0.0}, {0.6, 0.8}})},
                          {"gp", matrix({{0.8, 0.6}, {0.0, 1.0}})}};
        example.params = {{"tau", "0.5"}};
        example.steps = [](const LossArguments& arguments) {
            Tensor a = arguments.input("a").value(), p = arguments.input("p").value();
            Tensor ga = arguments.input("ga").value(), gp = arguments.input("gp").value();
            double tau = arguments.number("tau"), margin = arguments.number("margin");
            bool absolute = arguments.text("strategy") == "absolute";
            int64_t N = a.size(0);
            Tensor I = identity(N), zero = Tensor::zeros({N, N}, Dtype::Float64);
            Tensor theta = sum(ga * gp, 1);                                            // [N]
            Tensor threshold = (absolute ? theta - margin : theta * (1.0 - margin)).reshape({N, 1});  // [N, 1]
            Tensor GAP = matmul(ga, gp, Transpose::Second), GAA = matmul(ga, ga, Transpose::Second),
                   GPP = matmul(gp, gp, Transpose::Second);                            // [N, N] each
            // 1 = kept, 0 = masked; then the diagonals: AP_ii always kept, AA_ii and PP_ii never.
            auto at_most_threshold = [&](const Tensor& guide) { return 1.0 - greater(guide, threshold); };
            Tensor keep = concat({maximum(at_most_threshold(GAP), I), at_most_threshold(GAA) * (1.0 - I),
                                  at_most_threshold(GPP) * (1.0 - I)},
                                 1);                                                   // [N, 3N]
            Tensor logits = concat({matmul(a, p, Transpose::Second), matmul(a, a, Transpose::Second),
                                    matmul(p, p, Transpose::Second)},
                                   1) / tau;                                           // [N, 3N]
            Tensor l = keep_where(logits, keep, -std::numeric_limits<double>::infinity());
            Tensor P = softmax(l);                                                     // [N, 3N], 0 where masked
            Tensor Y = concat({I, zero, zero}, 1);                                     // [N, 3N]
            Tensor G = (P - Y) / static_cast<double>(N);                               // [N, 3N]
            Tensor G_ap = slice(G, 1, 0, N), G_aa = slice(G, 1, N, 2 * N), G_pp = slice(G, 1, 2 * N, 3 * N);
            auto T = [](const Tensor& m) { return transpose(m, 0, 1); };
            return std::vector<DerivationStep>{
                {"theta", "ga_i·gp_i", theta},
                {"threshold", absolute ? "theta - margin" : "theta (1 - margin)", threshold.reshape({N})},
                {"GAP", "ga gp^T", GAP},
                {"GAA", "ga ga^T", GAA},
                {"GPP", "gp gp^T", GPP},
                {"keep", "[AP | AA | PP]: 1 where the guide sim <= threshold_i; AP_ii 1, AA_ii, PP_ii 0", keep},
                {"l", "[a p^T | a a^T | p p^T] / tau, -inf where not kept", l},
                {"P", "softmax of each row of l", P},
                {"G", "(P - Y) / N, Y one-hot at column i", G},
                {"da", "( G_ap p + (G_aa + G_aa^T) a ) / tau", (matmul(G_ap, p) + matmul(G_aa + T(G_aa), a)) / tau},
                {"dp", "( G_ap^T a + (G_pp + G_pp^T) p ) / tau",
                 (matmul(G_ap, a, Transpose::First) + matmul(G_pp + T(G_pp), p)) / tau}};
        };
        return example;
    };
    return loss;
}

}  // namespace nce::losses
