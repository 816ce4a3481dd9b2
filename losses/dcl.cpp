#include "losses/dcl.h"

#include <cmath>
#include <limits>

#include "losses/loss_common.h"
#include "losses/random_inputs.h"

namespace nce::losses {
namespace {

constexpr const char* kLoss = "dcl";

// 1 off the diagonal, 0 on it: keep_where keeps the entries where the mask is 1.   [n, n]
Tensor off_diagonal(int64_t n, Dtype dtype) {
    Tensor mask = Tensor::full({n, n}, 1.0, Dtype::Float64);
    for (int64_t i = 0; i < n; ++i) mask.data<double>()[i * n + i] = 0.0;
    return mask.to(dtype);
}

// One direction of the loss, for anchors a and partners b (a = u, b = v, or the reverse).
struct Direction {
    double loss_sum = 0;      // sum_i D_i(a, b)
    Tensor dloss_dsame;       // dD/d(a_i·a_k/tau), all rows together: P^aa          [N, N]
    Tensor dloss_dcross;      // dD/d(a_i·b_k/tau): P^ab - I                         [N, N]
};

// Row i of the logits is [ a_i·a_k/tau for every k | a_i·b_k/tau for every k ]   [N, 2N]
// with both k = i entries at -inf (a_i·a_i is not a negative; a_i·b_i is the positive,
// which DCL leaves out of the denominator). Then
//   D_i = lse(row_i) - a_i·b_i/tau,   P = softmax(row_i) (0 at the -inf entries)
//   dD_i/d(a_i·a_k/tau) = P^aa_ik,   dD_i/d(a_i·b_k/tau) = P^ab_ik - [k = i]
// The lse shifts each row by its largest finite entry, so no exp of a positive number.
Direction one_direction(const Tensor& a, const Tensor& b, double tau) {
    int64_t N = a.size(0);
    Tensor keep = off_diagonal(N, a.dtype());
    const double minus_infinity = -std::numeric_limits<double>::infinity();
    Tensor same = matmul(a, a, Transpose::Second) / tau;    // a a^T / tau   [N, N]
    Tensor cross = matmul(a, b, Transpose::Second) / tau;   // a b^T / tau   [N, N]
    Tensor positives = sum(a * b, 1) / tau;                 // a_i·b_i / tau [N]
    Tensor row = concat({keep_where(same, keep, minus_infinity), keep_where(cross, keep, minus_infinity)}, 1);
    Tensor row_max = max(row, 1, /*keepdim=*/true).values;            // [N, 1]
    Tensor shifted = exp(row - row_max);                              // every exponent <= 0; 0 at -inf
    Tensor total = sum(shifted, 1, /*keepdim=*/true);                 // [N, 1], >= 1 (the max's own term)
    Tensor lse = row_max + log(total);                                // [N, 1]
    Tensor probabilities = shifted / total;                           // P [N, 2N]

    Direction direction;
    direction.loss_sum = sum(lse.reshape({N}) - positives).item();
    direction.dloss_dsame = slice(probabilities, 1, 0, N);
    direction.dloss_dcross = slice(probabilities, 1, N, 2 * N) - (1.0 - keep);
    return direction;
}

void check_inputs(const Var& u, const Var& v, double tau) {
    check_matrix(u, kLoss, "u");
    check_matrix(v, kLoss, "v");
    check_same_shape(u, v, kLoss, "u", "v");
    NCE_CHECK(u.dtype() == v.dtype(), "{}: u is {} but v is {}; give both the same dtype", kLoss,
              dtype_name(u.dtype()), dtype_name(v.dtype()));
    check_min_rows(u.size(0), 2, kLoss, "N (rows of u, v; the other rows are the negatives)");
    NCE_CHECK(tau > 0 && std::isfinite(tau), "{}: parameter tau must be a finite number > 0, got {}", kLoss, tau);
}

}  // namespace

// DCL.     u, v: [N, d]     UU = u u^T/tau, UV = u v^T/tau, VV = v v^T/tau: [N, N]  (VU = UV^T)
//   L = (1/N) sum_i D_i(u,v) + (1/N) sum_i D_i(v,u)
//
// Backward (each step in docs/derivations/dcl.md). Per direction, with G = dL/d(logits):
//   direction (u,v):  A1 = P1^aa / N  on UU,   C1 = (P1^ab - I) / N  on UV
//   direction (v,u):  A2 = P2^aa / N  on VV,   C2 = (P2^ab - I) / N  on VU = UV^T
// A similarity block x y^T / tau with gradient G sends G·y/tau to x and G^T·x/tau to y; a
// block x x^T/tau sends (G + G^T)·x/tau to x. Collecting what reaches u and v:
//   dL/du = [ (A1 + A1^T)·u + C1·v + C2^T·v ] / tau      [N, N]·[N, d]
//   dL/dv = [ (A2 + A2^T)·v + C2·u + C1^T·u ] / tau
// The node's output gradient dy (a scalar) multiplies each of them.
Var dcl(const Var& u, const Var& v, double tau) {
    check_inputs(u, v, tau);
    int64_t N = u.size(0);
    const Tensor &uv = u.value(), &vv = v.value();
    Direction u_to_v = one_direction(uv, vv, tau);  // D_i(u, v)
    Direction v_to_u = one_direction(vv, uv, tau);  // D_i(v, u)
    Tensor loss = Tensor::scalar((u_to_v.loss_sum + v_to_u.loss_sum) / static_cast<double>(N), u.dtype());

    double inverse_N = 1.0 / static_cast<double>(N);
    Tensor A1 = u_to_v.dloss_dsame * inverse_N, C1 = u_to_v.dloss_dcross * inverse_N;  // [N, N]
    Tensor A2 = v_to_u.dloss_dsame * inverse_N, C2 = v_to_u.dloss_dcross * inverse_N;  // [N, N]
    Tensor C1T = transpose(C1, 0, 1), C2T = transpose(C2, 0, 1);
    return Var::from_op(kLoss, std::move(loss), {u, v},
        [uv, vv, A1_sym = A1 + transpose(A1, 0, 1), A2_sym = A2 + transpose(A2, 0, 1), C1_plus_C2T = C1 + C2T,
         C2_plus_C1T = C2 + C1T, tau](const Tensor& dloss) -> Grads {
            double factor = dloss.item() / tau;
            Tensor du = (matmul(A1_sym, uv) + matmul(C1_plus_C2T, vv)) * factor;  // [N, d]
            Tensor dv = (matmul(A2_sym, vv) + matmul(C2_plus_C1T, uv)) * factor;  // [N, d]
            return {du, dv};
        });
}

LossDefinition dcl_definition() {
    LossDefinition loss;
    loss.name = kLoss;
    loss.inputs = {{"u", InputKind::Embedding}, {"v", InputKind::Embedding}};
    loss.params = {{"tau", "0.1", ParamRule::Positive, {}}};
    loss.compute = [](const LossArguments& arguments) {
        return dcl(arguments.input("u"), arguments.input("v"), arguments.number("tau"));
    };
    // max(rows, 2) items seen twice: v_i is u_i plus noise, renormalised, so each positive
    // stands out from the negatives without swamping them.
    loss.example = [](Generator& generator, int64_t rows, int64_t dim) {
        int64_t N = std::max<int64_t>(rows, 2);
        Tensor u = random_unit_rows(generator, N, dim);
        Tensor v = u + random_unit_rows(generator, N, dim) * 0.7;
        v = v / sqrt(sum(v * v, 1, /*keepdim=*/true));
        return std::map<std::string, Tensor>{{"u", u}, {"v", v}};
    };
    return loss;
}

}  // namespace nce::losses
