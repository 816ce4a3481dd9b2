#include "losses/siglip.h"

#include <cmath>
#include <limits>

#include "losses/loss_common.h"
#include "losses/random_inputs.h"
#include "losses/softplus.h"
#include "losses/worked_example.h"

namespace nce::losses {
namespace {

constexpr const char* kSiglip = "siglip";

// z_ij = 1 on the diagonal (the matching pair), -1 elsewhere, on like's device.   [N, N]
Tensor pair_signs(int64_t rows, const Tensor& like) { return identity_like(rows, like) * 2.0 - 1.0; }

// Whether every entry of x is finite, decided on x's device with one number read back:
// x ⊙ 0 is 0 where x is finite and NaN where it is not, and one NaN makes the sum NaN.
bool every_entry_finite(const Tensor& x) { return sum(x * 0.0).item() == 0.0; }

// A one-element gradient (shape []) in the shape ([] or [1]) and dtype of its input.
Tensor gradient_of_scalar_input(const Tensor& gradient, const Var& input) {
    return gradient.reshape(input.shape()).to(input.dtype());
}

void check_siglip_inputs(const Var& x, const Var& y) {
    check_matrix(x, kSiglip, "x");
    check_matrix(y, kSiglip, "y");
    check_same_shape(x, y, kSiglip, "x", "y");
    NCE_CHECK(x.dtype() == y.dtype(), "{}: x is {} but y is {}; give both the same dtype", kSiglip,
              dtype_name(x.dtype()), dtype_name(y.dtype()));
    check_min_rows(x.size(0), 1, kSiglip, "N (rows of x, y)");
}

}  // namespace

// SigLIP.     x, y: [N, d]    S = x y^T: [N, N]    scale = exp(log_scale)
//   g = scale S + bias                       [N, N]
//   z_ij = 1 if i = j else -1                [N, N]  (data: which pairs match)
//   L = (1/N) sum_ij softplus(-z_ij g_ij)    since -log sigmoid(m) = log(1 + exp(-m)) = softplus(-m)
//
// Backward (each step in docs/derivations/siglip.md):
//   d softplus(t)/dt = sigmoid(t), and t = -z_ij g_ij has dt/dg_ij = -z_ij, so
//   dL/dg = G = -(1/N) z ⊙ sigmoid(-z ⊙ g)   [N, N]
//   dL/dx = scale · G · y                     [N, N]·[N, d]
//   dL/dy = scale · G^T · x                   [N, N]^T·[N, d]
//   dL/dlog_scale = sum_ij G_ij · scale S_ij   (dscale/dlog_scale = scale)
//                 = sum(x ⊙ dL/dx)            (row i of G·y dotted with x_i is sum_j G_ij S_ij)
//   dL/dbias = sum_ij G_ij                    (dg_ij/dbias = 1)
// The node's output gradient dy (a scalar) multiplies each of them.
Var siglip(const Var& x, const Var& y, const Var& log_scale, const Var& bias) {
    check_siglip_inputs(x, y);
    double log_scale_value = read_scalar(log_scale, kSiglip, "log_scale");
    double bias_value = read_scalar(bias, kSiglip, "bias");
    double scale = std::exp(log_scale_value);
    double largest = x.dtype() == Dtype::Float32 ? std::numeric_limits<float>::max()
                                                 : std::numeric_limits<double>::max();
    NCE_CHECK(scale < largest, "{}: exp(log_scale) overflows {} (log_scale = {}); give a log_scale below {}", kSiglip,
              dtype_name(x.dtype()), log_scale_value, std::log(largest));
    int64_t N = x.size(0);

    Tensor logits = matmul(x.value(), y.value(), Transpose::Second) * scale + bias_value;  // g [N, N]
    NCE_CHECK(every_entry_finite(logits),
              "{}: the logits exp(log_scale) x_i·y_j + bias overflow {} (log_scale = {}); lower log_scale", kSiglip,
              dtype_name(x.dtype()), log_scale_value);
    Tensor signs = pair_signs(N, logits);                                  // z [N, N]
    Tensor margins = signs * logits;  // z_ij g_ij: positive when the pair is judged right   [N, N]
    Tensor loss = sum(softplus(-margins)) / static_cast<double>(N);      // -log sigmoid(m) = softplus(-m)   []
    Tensor G = -(signs * sigmoid(-margins)) / static_cast<double>(N);    // dL/dg [N, N]

    return Var::from_op(kSiglip, std::move(loss), {x, y, log_scale, bias},
        [xv = x.value(), yv = y.value(), G, scale, log_scale_like = log_scale.detach(),
         bias_like = bias.detach()](const Tensor& dy) -> Grads {
            double factor = dy.item();
            Tensor dloss_dx = matmul(G, yv) * (scale * factor);                    // scale · G · y      [N, d]
            Tensor dloss_dy = matmul(G, xv, Transpose::First) * (scale * factor);  // scale · G^T · x    [N, d]
            Tensor dlog_scale = sum(xv * dloss_dx);  // sum(x ⊙ dL/dx); the factor dy is already in   []
            Tensor dbias = sum(G) * factor;          // sum_ij G_ij                                   []
            return {dloss_dx, dloss_dy, gradient_of_scalar_input(dlog_scale, log_scale_like),
                    gradient_of_scalar_input(dbias, bias_like)};
        });
}

LossDefinition siglip_definition() {
    LossDefinition loss;
    loss.name = kSiglip;
    loss.inputs = {{"x", InputKind::Embedding},
                   {"y", InputKind::Embedding},
                   {"log_scale", InputKind::Scalar},
                   {"bias", InputKind::Scalar}};
    loss.params = {};
    loss.compute = [](const LossArguments& arguments) {
        return siglip(arguments.input("x"), arguments.input("y"), arguments.input("log_scale"),
                      arguments.input("bias"));
    };
    // Pairs of unit rows, y_i a noisy copy of x_i (so matching pairs score higher), at a scale
    // of 10 and bias -2: the logits spread over about [-12, 8], where sigmoid is not flat.
    loss.example = [](Generator& generator, int64_t rows, int64_t dim) {
        Tensor x = random_unit_rows(generator, rows, dim);
        Tensor y = x + random_unit_rows(generator, rows, dim);
        y = y / sqrt(sum(y * y, 1, /*keepdim=*/true));
        return std::map<std::string, Tensor>{{"x", x},
                                             {"y", y},
                                             {"log_scale", Tensor::full({1}, std::log(10.0), Dtype::Float64)},
                                             {"bias", Tensor::full({1}, -2.0, Dtype::Float64)}};
    };
    // The page's example: two pairs of unit rows, each closer to its own partner (0.96) than
    // to the other (-0.28, 0.28), at a scale of 2 and a bias of -1.
    loss.worked_example = [] {
        WorkedExample example;
        example.inputs = {{"x", matrix({{0.6, 0.8}, {0.8, -0.6}})},
                          {"y", matrix({{0.8, 0.6}, {0.6, -0.8}})},
                          {"log_scale", Tensor::full({1}, std::log(2.0), Dtype::Float64)},
                          {"bias", Tensor::full({1}, -1.0, Dtype::Float64)}};
        example.steps = [](const LossArguments& arguments) {
            Tensor x = arguments.input("x").value(), y = arguments.input("y").value();
            double scale = std::exp(arguments.input("log_scale").value().item());
            double bias = arguments.input("bias").value().item();
            int64_t N = x.size(0);
            Tensor S = matmul(x, y, Transpose::Second);                  // [N, N]
            Tensor g = S * scale + bias;                                 // [N, N]
            Tensor z = identity(N) * 2.0 - 1.0;                          // [N, N]: 1 on the diagonal, -1 off it
            Tensor wrongness = sigmoid(-(z * g));                        // [N, N]
            Tensor G = -(z * wrongness) / static_cast<double>(N);        // [N, N]
            Tensor dx = matmul(G, y) * scale;                            // [N, d]
            return std::vector<DerivationStep>{
                {"scale", "exp(log_scale)", Tensor::scalar(scale, Dtype::Float64)},
                {"S", "x y^T", S},
                {"g", "scale S + bias", g},
                {"z", "1 if i = j else -1", z},
                {"softplus(-z ⊙ g)", "each pair's term of the loss", log(1.0 + exp(-(z * g)))},
                {"sigmoid(-z ⊙ g)", "how wrong each pair is judged, in (0, 1)", wrongness},
                {"G", "-(1/N) z ⊙ sigmoid(-z ⊙ g)", G},
                {"dx", "scale G y", dx},
                {"dy", "scale G^T x", matmul(G, x, Transpose::First) * scale},
                {"dlog_scale", "scale sum_ij G_ij S_ij", (sum(G * S) * scale).reshape({1})},
                {"sum(x ⊙ dx)", "the same number, as the backward forms it", sum(x * dx)},
                {"dbias", "sum_ij G_ij", sum(G).reshape({1})}};
        };
        return example;
    };
    return loss;
}

}  // namespace nce::losses
