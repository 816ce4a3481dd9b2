#include "losses/ntxent.h"

#include <algorithm>
#include <cmath>

#include "losses/loss_common.h"
#include "losses/random_inputs.h"
#include "losses/softmax_rows.h"
#include "losses/worked_example.h"

namespace nce::losses {
namespace {

// l_ii = -inf for every i: -inf scatter-added at column i of row i, where the logits are
// (only the n column numbers travel to a device, not an n x n mask).   [n, n]
void mask_diagonal(Tensor& logits) {
    const int64_t n = logits.size(0);
    std::vector<int64_t> diagonal(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) diagonal[static_cast<size_t>(i)] = i;
    const Tensor minus_infinities = Tensor::full({n}, -INFINITY, logits.dtype(), logits.device());
    backend_for(logits.device())
        .scatter_add_last_axis(minus_infinities, Tensor::from_indices(diagonal, {n}).to(logits.device()), logits);
}

}  // namespace

// NT-Xent.   z: [2B, d]   S = z z^T: [2B, 2B]   l = S / tau   p(i) = (i + B) mod 2B
//   L = (1/2B) sum_i ( lse_j l_ij - l_i,p(i) )      with mask_self, l_ii = -inf (left out of the lse)
//
// Backward (each step in docs/derivations/ntxent.md):
//   dL/dl = G = (P - Y) / 2B        [2B, 2B]   P = softmax rows of l (P_ii = 0 when masked), Y one-hot at p(i)
//   l_ij = z_i·z_j / tau holds z twice: z_k appears as the row (i = k) and as the column (j = k), so
//   dL/dz_k = sum_j G_kj z_j / tau + sum_i G_ik z_i / tau,   i.e.
//   dL/dz   = (G + G^T) · z / tau   [2B, 2B]·[2B, d]    (the spec's (G + G^T) Z / (2B tau) with G unscaled)
//   dL/dtau = -(1/tau) sum_ij G_ij l_ij = -(1/tau^2) sum_ij G_ij S_ij   (S, not l: a masked l_ii is -inf, G_ii is 0)
//   dL/dlog_tau = tau · dL/dtau     (0 while tau is clamped at 1e-4)
// The node's output gradient dy (a scalar) multiplies each of them.
Var ntxent(const Var& z, const Var& log_tau, double tau, bool mask_self) {
    check_matrix(z, "ntxent", "z");
    NCE_CHECK(z.size(0) % 2 == 0, "ntxent: z must stack two views of B items, so 2B rows; got {} rows (shape {})",
              z.size(0), shape_string(z.shape()));
    int64_t B = z.size(0) / 2;
    check_min_rows(B, 2, "ntxent", "B (z has 2B rows)");
    NCE_CHECK(tau > 0 && std::isfinite(tau), "ntxent: parameter tau must be a finite number > 0, got {}", tau);
    Temperature temperature = resolve_temperature(log_tau, tau, "ntxent");

    Tensor similarities = matmul(z.value(), z.value(), Transpose::Second);  // S [2B, 2B]
    Tensor logits = similarities / temperature.tau;                          // l [2B, 2B]
    if (mask_self) mask_diagonal(logits);
    std::vector<int64_t> positive_column(2 * B);
    for (int64_t i = 0; i < 2 * B; ++i) positive_column[i] = (i + B) % (2 * B);
    SoftmaxCrossEntropy rows = softmax_cross_entropy_rows(logits, positive_column);
    Tensor loss = (rows.loss_sum() / (2.0 * B)).to(z.dtype());  // [] where z is

    Tensor G = rows.probabilities_minus_targets / (2.0 * B);  // dL/dl [2B, 2B]
    Tensor dloss_dlog_tau;  // at dy = 1; stays undefined for a fixed tau
    if (temperature.learnable) {
        double dloss_dtau = -sum(G * similarities).item() / (temperature.tau * temperature.tau);
        dloss_dlog_tau = log_tau_gradient(temperature, dloss_dtau, log_tau);
    }
    Tensor G_plus_G_transposed = G + transpose(G, 0, 1);  // [2B, 2B]

    std::vector<Var> inputs{z};
    if (log_tau.defined()) inputs.push_back(log_tau);
    return Var::from_op("ntxent", std::move(loss), inputs,
                        [z = z.value(), G_plus_G_transposed, dloss_dlog_tau,
                         inverse_tau = 1.0 / temperature.tau](const Tensor& dy) -> Grads {
                            Tensor dz = matmul(G_plus_G_transposed, z) * inverse_tau * dy;  // [2B, d]
                            Grads grads{dz};
                            if (dloss_dlog_tau.defined()) grads.push_back(dloss_dlog_tau * dy);
                            return grads;
                        });
}

LossDefinition ntxent_definition() {
    LossDefinition loss;
    loss.name = "ntxent";
    loss.inputs = {{"z", InputKind::Embedding}, {"log_tau", InputKind::Scalar, /*required=*/false}};
    loss.params = {{"tau", "0.1", ParamRule::Positive, {}}, {"mask_self", "1", ParamRule::Flag, {}}};
    loss.compute = [](const LossArguments& arguments) {
        return ntxent(arguments.input("z"), arguments.optional("log_tau"), arguments.number("tau"),
                      arguments.number("mask_self") != 0);
    };
    // B = max(rows, 2) items seen twice: the second view is the first plus noise, renormalised;
    // a learnable tau of 0.2.
    loss.example = [](Generator& generator, int64_t rows, int64_t dim) {
        int64_t B = std::max<int64_t>(rows, 2);
        Tensor first_view = random_unit_rows(generator, B, dim);
        Tensor second_view = first_view + random_unit_rows(generator, B, dim) * 0.5;
        second_view = second_view / sqrt(sum(second_view * second_view, 1, /*keepdim=*/true));
        return std::map<std::string, Tensor>{{"z", concat({first_view, second_view}, 0)},
                                             {"log_tau", Tensor::scalar(std::log(0.2), Dtype::Float64)}};
    };
    // The page's example: B = 2 items seen twice (z is [4, 2], unit rows), a learnable tau of
    // 0.5, mask_self = 1. Rows 0 and 2 are the two views of item 0, rows 1 and 3 of item 1.
    loss.worked_example = [] {
        WorkedExample example;
        example.inputs = {{"z", matrix({{0.0, 1.0}, {1.0, 0.0}, {0.6, 0.8}, {0.8, -0.6}})},
                          {"log_tau", Tensor::scalar(std::log(0.5), Dtype::Float64)}};
        example.steps = [](const LossArguments& arguments) {
            Tensor z = arguments.input("z").value();
            double tau = std::exp(arguments.input("log_tau").value().item());
            int64_t rows = z.size(0), B = rows / 2;
            Tensor I = identity(rows);                                                   // [2B, 2B]
            Tensor S = matmul(z, z, Transpose::Second);                                  // [2B, 2B]
            Tensor l = keep_where(S / tau, 1.0 - I, -INFINITY);                          // [2B, 2B]
            Tensor Y = concat({slice(I, 0, B, rows), slice(I, 0, 0, B)}, 0);             // row i: I's row p(i)
            Tensor P = softmax(l);                                                       // [2B, 2B]
            Tensor G = (P - Y) / static_cast<double>(rows);                              // [2B, 2B]
            Tensor dz = matmul(G + transpose(G, 0, 1), z) / tau;                         // [2B, d]
            return std::vector<DerivationStep>{
                {"tau", "exp(log_tau)", Tensor::scalar(tau, Dtype::Float64)},
                {"S", "z z^T", S},
                {"l", "S / tau, with l_ii = -inf (mask_self)", l},
                {"P", "softmax of each row of l", P},
                {"Y", "one-hot at p(i) = (i + B) mod 2B", Y},
                {"G", "(P - Y) / 2B", G},
                {"G + G^T", "G plus its transpose (z_k is a row and a column of l)", G + transpose(G, 0, 1)},
                {"dz", "(G + G^T) z / tau", dz},
                {"dlog_tau", "tau dL/dtau = -(1/tau) sum_ij G_ij S_ij", -sum(G * S) / tau}};
        };
        return example;
    };
    return loss;
}

}  // namespace nce::losses
