#include "losses/dcl.h"

#include <cmath>
#include <limits>

#include "losses/loss_common.h"
#include "losses/random_inputs.h"
#include "losses/worked_example.h"

namespace nce::losses {
namespace {

constexpr const char* kDcl = "dcl";

// One direction of the loss, for anchors a and partners b (a = u, b = v, or the reverse).
struct Direction {
    Tensor loss_sum;          // sum_i D_i(a, b)                                      []
    Tensor dloss_dsame;       // dD/d(a_i·a_k/tau), all rows together: P^aa          [N, N]
    Tensor dloss_dcross;      // dD/d(a_i·b_k/tau): P^ab - I                         [N, N]
};

// Row i of the logits is [ a_i·a_k/tau for every k | a_i·b_k/tau for every k ]   [N, 2N]
// with both k = i entries at -inf (a_i·a_i is not a negative; a_i·b_i is the positive,
// which DCL leaves out of the denominator). Then
//   D_i = lse(row_i) - a_i·b_i/tau,   P = softmax(row_i) (0 at the -inf entries)
//   dD_i/d(a_i·a_k/tau) = P^aa_ik,   dD_i/d(a_i·b_k/tau) = P^ab_ik - [k = i]
// The lse shifts each row by its largest finite entry, so no exp of a positive number.
Direction dcl_direction(const Tensor& a, const Tensor& b, double tau) {
    int64_t N = a.size(0);
    Tensor identity = identity_like(N, a);                 // I [N, N], on a's device
    Tensor keep = 1.0 - identity;                          // 1 off the diagonal: keep_where keeps those
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
    direction.loss_sum = sum(lse.reshape({N}) - positives);
    direction.dloss_dsame = slice(probabilities, 1, 0, N);
    direction.dloss_dcross = slice(probabilities, 1, N, 2 * N) - identity;
    return direction;
}

void check_dcl_inputs(const Var& u, const Var& v, double tau) {
    check_matrix(u, kDcl, "u");
    check_matrix(v, kDcl, "v");
    check_same_shape(u, v, kDcl, "u", "v");
    NCE_CHECK(u.dtype() == v.dtype(), "{}: u is {} but v is {}; give both the same dtype", kDcl,
              dtype_name(u.dtype()), dtype_name(v.dtype()));
    check_min_rows(u.size(0), 2, kDcl, "N (rows of u, v; the other rows are the negatives)");
    NCE_CHECK(tau > 0 && std::isfinite(tau), "{}: parameter tau must be a finite number > 0, got {}", kDcl, tau);
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
    check_dcl_inputs(u, v, tau);
    int64_t N = u.size(0);
    const Tensor &uv = u.value(), &vv = v.value();
    Direction u_to_v = dcl_direction(uv, vv, tau);  // D_i(u, v)
    Direction v_to_u = dcl_direction(vv, uv, tau);  // D_i(v, u)
    Tensor loss = (u_to_v.loss_sum + v_to_u.loss_sum) / static_cast<double>(N);  // []

    double inverse_N = 1.0 / static_cast<double>(N);
    Tensor A1 = u_to_v.dloss_dsame * inverse_N, C1 = u_to_v.dloss_dcross * inverse_N;  // [N, N]
    Tensor A2 = v_to_u.dloss_dsame * inverse_N, C2 = v_to_u.dloss_dcross * inverse_N;  // [N, N]
    Tensor C1T = transpose(C1, 0, 1), C2T = transpose(C2, 0, 1);
    return Var::from_op(kDcl, std::move(loss), {u, v},
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
    loss.name = kDcl;
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
    // The page's example: two items seen twice as unit rows, tau 0.5. The sums over k != i are
    // written with exp and a 0/1 mask, as the spec writes them (no -inf, no shift).
    loss.worked_example = [] {
        WorkedExample example;
        example.inputs = {{"u", matrix({{1.0, 0.0}, {0.6, 0.8}})}, {"v", matrix({{0.8, 0.6}, {-0.6, 0.8}})}};
        example.params = {{"tau", "0.5"}};
        example.steps = [](const LossArguments& arguments) {
            Tensor u = arguments.input("u").value(), v = arguments.input("v").value();
            double tau = arguments.number("tau");
            int64_t N = u.size(0);
            Tensor I = identity(N), off = 1.0 - identity(N);                     // [N, N]
            Tensor UU = matmul(u, u, Transpose::Second) / tau;                    // [N, N]
            Tensor UV = matmul(u, v, Transpose::Second) / tau;                    // [N, N]
            Tensor VV = matmul(v, v, Transpose::Second) / tau;                    // [N, N]
            Tensor VU = transpose(UV, 0, 1);                                      // [N, N]
            // One direction, anchors with themselves (same) and with their partners (cross).
            struct Direction {
                Tensor D, P_same, P_cross;  // [N], [N, N], [N, N]
            };
            auto direction = [&](const Tensor& same, const Tensor& cross) {
                Tensor e_same = exp(same) * off, e_cross = exp(cross) * off;     // [N, N], 0 at k = i
                Tensor denominator = sum(e_same + e_cross, 1, /*keepdim=*/true);  // [N, 1]
                Tensor positive = sum(cross * I, 1);                              // [N], a_i·b_i / tau
                return Direction{log(denominator).reshape({N}) - positive, e_same / denominator,
                                 e_cross / denominator};
            };
            Direction forward = direction(UU, UV), backward = direction(VV, VU);
            Tensor A1 = forward.P_same / static_cast<double>(N), C1 = (forward.P_cross - I) / static_cast<double>(N);
            Tensor A2 = backward.P_same / static_cast<double>(N), C2 = (backward.P_cross - I) / static_cast<double>(N);
            auto T = [](const Tensor& m) { return transpose(m, 0, 1); };
            return std::vector<DerivationStep>{
                {"UU", "u u^T / tau", UU},
                {"UV", "u v^T / tau", UV},
                {"VV", "v v^T / tau", VV},
                {"D(u,v)", "-UV_ii + log( sum_{k!=i} exp(UU_ik) + sum_{k!=i} exp(UV_ik) )", forward.D},
                {"D(v,u)", "-VU_ii + log( sum_{k!=i} exp(VV_ik) + sum_{k!=i} exp(VU_ik) )", backward.D},
                {"P1^aa", "exp(UU_ik) / row i's sum, 0 at k = i", forward.P_same},
                {"P1^ab", "exp(UV_ik) / row i's sum, 0 at k = i", forward.P_cross},
                {"P2^aa", "exp(VV_ik) / row i's sum, 0 at k = i", backward.P_same},
                {"P2^ab", "exp(VU_ik) / row i's sum, 0 at k = i", backward.P_cross},
                {"A1", "P1^aa / N", A1},
                {"C1", "(P1^ab - I) / N", C1},
                {"A2", "P2^aa / N", A2},
                {"C2", "(P2^ab - I) / N", C2},
                {"du", "[ (A1 + A1^T) u + (C1 + C2^T) v ] / tau",
                 (matmul(A1 + T(A1), u) + matmul(C1 + T(C2), v)) / tau},
                {"dv", "[ (A2 + A2^T) v + (C2 + C1^T) u ] / tau",
                 (matmul(A2 + T(A2), v) + matmul(C2 + T(C1), u)) / tau}};
        };
        return example;
    };
    return loss;
}

}  // namespace nce::losses
