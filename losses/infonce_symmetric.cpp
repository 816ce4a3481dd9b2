#include "losses/infonce_symmetric.h"

#include <cmath>

#include "losses/infonce.h"
#include "losses/infonce_reference.h"
#include "losses/loss_common.h"
#include "losses/random_inputs.h"

namespace nce::losses {

// Symmetric InfoNCE.
//   q: [N, d]   p: [N, d]   negatives: [M, d]   C = [p; negatives]: [N+M, d]
//   a = q C^T / tau    [N, N+M]   direction q->p: row i's positive is column i
//   b = p q^T / tau    [N, N]     direction p->q: row i's positive is column i
//   L = 1/2 [ (1/N) sum_i ( lse_j a_ij - a_ii ) + (1/N) sum_i ( lse_j b_ij - b_ii ) ]
//
// Backward (each step in docs/derivations/infonce_symmetric.md):
//   dL/da = A = (P_a - Y) / 2N     [N, N+M]       dL/db = B = (P_b - Y) / 2N     [N, N]
//   a_ij = q_i·c_j / tau:   dL/dq += A · C / tau          dL/dC  = A^T · q / tau   (rows 0..N-1 -> p, N.. -> negatives)
//   b_ij = p_i·q_j / tau:   dL/dp += B · q / tau          dL/dq += B^T · p / tau
//   so  dL/dq = (A · C + B^T · p) / tau                     [N, d]
//       dL/dp = (A^T · q)[rows 0..N-1] / tau + B · q / tau  [N, d]
//       dL/dnegatives = (A^T · q)[rows N..] / tau           [M, d]
//   dL/dtau = -(1/tau) ( sum_ij A_ij a_ij + sum_ij B_ij b_ij );  dL/dlog_tau = tau · dL/dtau (0 while clamped)
//
// The fused kernel (infonce_symmetric_sweep, losses/infonce_blocks.h) uses that b is a
// transpose: b_ij = p_i·q_j / tau = a_ji for j < N, so B^T sits on the first N columns of
// a and both directions flow through the one matrix a:
//   G = dL/da = A + [B^T | 0]        [N, N+M]   (B^T: the column softmax of a[:, :N], minus Y, / 2N)
//   dL/dq = G · C / tau,   dL/dC = G^T · q / tau,   dL/dtau = -(1/tau) sum_ij G_ij a_ij
// which are the lines above regrouped (B^T·p = [B^T | 0]·C and B·q = ([B^T | 0]^T·q) on
// the rows of p). It computes them during the forward, block by block, and the node's
// backward multiplies them by dy. The unfused lines, one op each: infonce_symmetric_reference.
Var infonce_symmetric(const Var& q, const Var& p, const Var& negatives, const Var& log_tau, double tau,
                      LogitBlocking blocking) {
    check_infonce_inputs(q, p, negatives, tau, "infonce_symmetric");
    Temperature temperature = resolve_temperature(log_tau, tau, "infonce_symmetric");
    logit_block_rows(blocking, q.size(0), q.size(0), q.dtype());  // checks block_rows
    if (q.value().device() != Device::CPU) return infonce_symmetric_reference(q, p, negatives, log_tau, tau);

    std::vector<Var> inputs{q, p};
    if (negatives.defined()) inputs.push_back(negatives);
    if (log_tau.defined()) inputs.push_back(log_tau);
    InfonceSweep sweep = infonce_symmetric_sweep(q.value(), p.value(), negatives.value(), temperature.tau,
                                                 any_needs_gradient(inputs), blocking);
    Tensor loss = Tensor::scalar(sweep.loss, q.dtype());
    Tensor dloss_dlog_tau = sweep.dq.defined() ? log_tau_gradient(temperature, sweep.dloss_dtau, log_tau) : Tensor();
    return Var::from_op("infonce_symmetric", std::move(loss), inputs, scaled_gradients(sweep, dloss_dlog_tau));
}

Var infonce_symmetric(const Var& q, const Var& p, const Var& negatives, const Var& log_tau, double tau) {
    return infonce_symmetric(q, p, negatives, log_tau, tau, LogitBlocking{});
}

LossDefinition infonce_symmetric_definition() {
    LossDefinition loss;
    loss.name = "infonce_symmetric";
    loss.inputs = {{"q", InputKind::Embedding},
                   {"p", InputKind::Embedding},
                   {"neg", InputKind::Embedding, /*required=*/false},
                   {"log_tau", InputKind::Scalar, /*required=*/false}};
    loss.params = {{"tau", "0.05", ParamRule::Positive, {}}};
    loss.compute = [](const LossArguments& arguments) {
        return infonce_symmetric(arguments.input("q"), arguments.input("p"), arguments.optional("neg"),
                                 arguments.optional("log_tau"), arguments.number("tau"));
    };
    // rows pairs (q_i, p_i), rows/2 + 1 extra negatives, a learnable tau of 0.1.
    loss.example = [](Generator& generator, int64_t rows, int64_t dim) {
        return std::map<std::string, Tensor>{
            {"q", random_unit_rows(generator, rows, dim)},
            {"p", random_unit_rows(generator, rows, dim)},
            {"neg", random_unit_rows(generator, rows / 2 + 1, dim)},
            {"log_tau", Tensor::scalar(std::log(0.1), Dtype::Float64)}};
    };
    return loss;
}

}  // namespace nce::losses
