#include "losses/infonce_symmetric.h"

#include <cmath>

#include "losses/infonce.h"
#include "losses/loss_common.h"
#include "losses/random_inputs.h"
#include "losses/softmax_rows.h"

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
// The node's output gradient dy (a scalar) multiplies each of them.
Var infonce_symmetric(const Var& q, const Var& p, const Var& negatives, const Var& log_tau, double tau) {
    check_infonce_inputs(q, p, negatives, tau, "infonce_symmetric");
    Temperature temperature = resolve_temperature(log_tau, tau, "infonce_symmetric");
    int64_t N = q.size(0);

    Tensor candidates = negatives.defined() ? concat({p.value(), negatives.value()}, 0) : p.value();      // C [N+M, d]
    Tensor q_to_p_logits = matmul(q.value(), candidates, Transpose::Second) / temperature.tau;            // a [N, N+M]
    Tensor p_to_q_logits = matmul(p.value(), q.value(), Transpose::Second) / temperature.tau;             // b [N, N]
    std::vector<int64_t> positive_column(N);
    for (int64_t i = 0; i < N; ++i) positive_column[i] = i;
    SoftmaxCrossEntropy q_to_p = softmax_cross_entropy_rows(q_to_p_logits, positive_column);
    SoftmaxCrossEntropy p_to_q = softmax_cross_entropy_rows(p_to_q_logits, positive_column);
    Tensor loss = Tensor::scalar((q_to_p.loss_sum + p_to_q.loss_sum) / (2.0 * N), q.dtype());

    Tensor dloss_dq_to_p = q_to_p.probabilities_minus_targets / (2.0 * N);  // A [N, N+M]
    Tensor dloss_dp_to_q = p_to_q.probabilities_minus_targets / (2.0 * N);  // B [N, N]
    Tensor dloss_dlog_tau;  // at dy = 1; stays undefined for a fixed tau
    if (temperature.learnable) {
        double dloss_dtau =
            -(sum(dloss_dq_to_p * q_to_p_logits).item() + sum(dloss_dp_to_q * p_to_q_logits).item()) / temperature.tau;
        dloss_dlog_tau = log_tau_gradient(temperature, dloss_dtau, log_tau);
    }

    std::vector<Var> inputs{q, p};
    if (negatives.defined()) inputs.push_back(negatives);
    if (log_tau.defined()) inputs.push_back(log_tau);
    return Var::from_op(
        "infonce_symmetric", std::move(loss), inputs,
        [q = q.value(), p = p.value(), candidates, A = dloss_dq_to_p, B = dloss_dp_to_q, dloss_dlog_tau,
         inverse_tau = 1.0 / temperature.tau, N, has_negatives = negatives.defined()](const Tensor& dy) -> Grads {
            double scale = dy.item() * inverse_tau;
            Tensor dq = (matmul(A, candidates) + matmul(B, p, Transpose::First)) * scale;  // (A·C + B^T·p) / tau  [N, d]
            Tensor dcandidates = matmul(A, q, Transpose::First) * scale;                  // A^T·q / tau          [N+M, d]
            Tensor dp = slice(dcandidates, 0, 0, N) + matmul(B, q) * scale;               // ... + B·q / tau      [N, d]
            Grads grads{dq, dp};
            if (has_negatives)
                grads.push_back(slice(dcandidates, 0, N, dcandidates.size(0)));           // dL/dnegatives        [M, d]
            if (dloss_dlog_tau.defined()) grads.push_back(dloss_dlog_tau * dy.item());
            return grads;
        });
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
