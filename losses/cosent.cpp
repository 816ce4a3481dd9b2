#include "losses/cosent.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "losses/loss_common.h"
#include "losses/random_inputs.h"
#include "losses/softplus.h"
#include "losses/worked_example.h"

namespace nce::losses {
namespace {

constexpr const char* kCosent = "cosent";

void check_cosent_inputs(const Var& x, const Var& y, double scale) {
    check_matrix(x, kCosent, "x");
    check_matrix(y, kCosent, "y");
    check_same_shape(x, y, kCosent, "x", "y");
    NCE_CHECK(x.dtype() == y.dtype(), "{}: x ({}) and y ({}) must have the same dtype", kCosent, dtype_name(x.dtype()),
              dtype_name(y.dtype()));
    check_min_rows(x.size(0), 1, kCosent, "N (rows of x)");
    NCE_CHECK(scale > 0 && std::isfinite(scale), "{}: parameter scale must be a finite number > 0, got {}", kCosent,
              scale);
}

// M_ij = 1 for the ordered pairs with label_i < label_j, else 0, on label's device and in
// like's dtype. The labels are compared in float64 (as given), so two labels that differ
// only past float32's precision still make a pair.   label: [N]  ->  [N, N]
Tensor ordered_pairs(const Tensor& label, const Tensor& like) {
    int64_t N = label.size(0);
    Tensor label64 = label.to(Dtype::Float64);
    return greater(label64.reshape({1, N}), label64.reshape({N, 1})).to(like.dtype());
}

}  // namespace

// CoSENT.     x, y: [N, d]     label: [N]     s: [N]
//   s_i  = scale x_i·y_i
//   D_ij = s_i - s_j on the pairs (label_i < label_j), -inf elsewhere        [N, N]
//   L = log( exp(0) + sum_ij exp(D_ij) ) = lse over { 0 } and every D_ij
//
// Stable forward: with top = max(0, max_ij D_ij),
//   L = top + log( exp(-top) + sum_ij exp(D_ij - top) )     (no exponent is positive)
//     = top + log1p( sum_ij exp(D_ij - top) + (exp(-top) - 1) )
//   exp(-top) - 1 is exactly 0 when top = 0, so L = log1p( sum_ij exp(D_ij) ) there, exact
//   for a small sum; when top > 0 the sum is >= 1 (the largest pair gives exp(0)) and the
//   log1p is a plain log.
//
// Backward: an lse has the softmax of its terms as its gradient, so with the pair weights
//   W_ij = exp(D_ij - L)                 [N, N]   (0 off the pairs; the 0 term's weight exp(-L) has no input)
//   dL/dD_ij = W_ij, and D_ij = s_i - s_j feeds s_i with +1 and s_j with -1:
//   dL/ds_k = sum_j W_kj - sum_i W_ik    = rowsum(W) - colsum(W)              [N]
//   dL/dx_k = scale dL/ds_k y_k          dL/dy_k = scale dL/ds_k x_k         [N, 1] * [N, d]
// No pair at all: every D_ij is -inf, L = log 1 = 0, W = 0 and every gradient is 0.
Var cosent(const Var& x, const Var& y, const Tensor& label, double scale) {
    check_cosent_inputs(x, y, scale);
    int64_t N = x.size(0);
    check_data_vector(Var(label), N, kCosent, "label");
    const Tensor &xv = x.value(), &yv = y.value();

    Tensor similarities = sum(xv * yv, 1) * scale;                                                // s [N]
    Tensor differences = similarities.reshape({N, 1}) - similarities.reshape({1, N});             // s_i - s_j [N, N]
    Tensor pairs = ordered_pairs(label.to(xv.device()), xv);                                      // M [N, N]
    differences = keep_where(differences, pairs, -std::numeric_limits<double>::infinity());      // D [N, N]
    Tensor top = binary_scalar(BinaryOp::Maximum, max(differences), 0.0);                        // []
    // Entries off the pairs are -inf, and exp(-inf) = 0 exactly: only the pairs count.
    Tensor rest = sum(exp(differences - top));                                                    // sum_ij exp(D_ij - top) []
    Tensor loss = top + log_one_plus(rest + (exp(-top) - 1.0));                                   // L []

    Tensor weights = exp(differences - loss);                                                     // W [N, N]
    Tensor dloss_dsimilarities = (sum(weights, 1) - sum(weights, 0)).reshape({N, 1}) * scale;     // scale dL/ds [N, 1]
    return Var::from_op(kCosent, std::move(loss), {x, y},
        [xv, yv, dloss_dsimilarities](const Tensor& dy) -> Grads {
            Tensor slope = dloss_dsimilarities * dy.item();  // [N, 1]
            return {slope * yv, slope * xv};
        });
}

LossDefinition cosent_definition() {
    LossDefinition loss;
    loss.name = kCosent;
    loss.inputs = {{"x", InputKind::Embedding}, {"y", InputKind::Embedding}, {"label", InputKind::Data}};
    loss.params = {{"scale", "20", ParamRule::Positive, {}}};
    loss.compute = [](const LossArguments& arguments) {
        return cosent(arguments.input("x"), arguments.input("y"), arguments.input("label").value(),
                      arguments.number("scale"));
    };
    // Random unit rows; labels from {0, 0.5, 1} (graded similarity, ties included: a tie is
    // no pair). A smooth loss: no kink to avoid.
    loss.example = [](Generator& generator, int64_t rows, int64_t dim) {
        std::vector<double> labels;
        for (int64_t i = 0; i < rows; ++i) labels.push_back(0.5 * static_cast<double>(generator.next_index(3)));
        return std::map<std::string, Tensor>{{"x", random_unit_rows(generator, rows, dim)},
                                             {"y", random_unit_rows(generator, rows, dim)},
                                             {"label", Tensor::from_vector(labels, {rows}, Dtype::Float64)}};
    };
    // The page's example: one ordered pair (label_0 = 0 < label_1 = 1) in the wrong order,
    // x_0·y_0 = 0.8 > x_1·y_1 = 0.6; scale 5 keeps the numbers small (s = (4, 3)).
    loss.worked_example = [] {
        WorkedExample example;
        example.inputs = {{"x", matrix({{1.0, 0.0}, {0.6, 0.8}})},
                          {"y", matrix({{0.8, 0.6}, {1.0, 0.0}})},
                          {"label", Tensor::from_vector({0.0, 1.0}, {2}, Dtype::Float64)}};
        example.params = {{"scale", "5"}};
        example.steps = [](const LossArguments& arguments) {
            Tensor x = arguments.input("x").value(), y = arguments.input("y").value();
            Tensor label = arguments.input("label").value();
            double scale = arguments.number("scale");
            int64_t N = x.size(0);
            Tensor s = sum(x * y, 1) * scale;                                                 // [N]
            Tensor M = greater(label.reshape({1, N}), label.reshape({N, 1}));                 // [N, N]
            Tensor D = keep_where(s.reshape({N, 1}) - s.reshape({1, N}), M,
                                  -std::numeric_limits<double>::infinity());                  // [N, N]
            Tensor L = log(1.0 + sum(exp(D)));                                                // []
            Tensor W = exp(D - L.item());                                                     // [N, N]
            Tensor ds = sum(W, 1) - sum(W, 0);                                                // [N]
            Tensor ds_rows = ds.reshape({N, 1}) * scale;                                      // [N, 1]
            return std::vector<DerivationStep>{
                {"s", "scale x_i.y_i", s},
                {"M", "1 where label_i < label_j, else 0", M},
                {"D", "s_i - s_j where M_ij = 1, else -inf", D},
                {"L", "log(1 + sum_ij exp(D_ij))", L},
                {"W", "dL/dD = exp(D - L)", W},
                {"ds", "dL/ds = rowsum(W) - colsum(W)", ds},
                {"dx", "scale ds_k y_k", ds_rows * y},
                {"dy", "scale ds_k x_k", ds_rows * x}};
        };
        return example;
    };
    return loss;
}

}  // namespace nce::losses
