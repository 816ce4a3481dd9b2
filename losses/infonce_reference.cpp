#include "losses/infonce_reference.h"

#include "losses/infonce.h"
#include "losses/loss_common.h"
#include "losses/softmax_rows.h"

namespace nce::losses {

// InfoNCE, one direction, with the whole logit matrix (derivation: docs/derivations/infonce.md).
//   l = q C^T / tau   [N, N+M]        G = dL/dl = (P - Y) / N
//   dL/dq = G · C / tau    dL/dC = G^T · q / tau    dL/dtau = -(1/tau) sum_ij G_ij l_ij
Var infonce_reference(const Var& q, const Var& p, const Var& negatives, const Var& log_tau, double tau) {
    check_infonce_inputs(q, p, negatives, tau, "infonce");
    Temperature temperature = resolve_temperature(log_tau, tau, "infonce");
    int64_t N = q.size(0);

    Tensor candidates = negatives.defined() ? concat({p.value(), negatives.value()}, 0) : p.value();  // C [N+M, d]
    Tensor logits = matmul(q.value(), candidates, Transpose::Second) / temperature.tau;              // l [N, N+M]
    std::vector<int64_t> positive_column(N);
    for (int64_t i = 0; i < N; ++i) positive_column[i] = i;
    SoftmaxCrossEntropy rows = softmax_cross_entropy_rows(logits, positive_column);
    Tensor loss = Tensor::scalar(rows.loss_sum().item() / N, q.dtype()).to(q.value().device());

    Tensor dloss_dlogits = rows.probabilities_minus_targets / static_cast<double>(N);  // G [N, N+M]
    Tensor dloss_dlog_tau;  // at dy = 1; stays undefined for a fixed tau
    if (temperature.learnable) {
        double dloss_dtau = -sum(dloss_dlogits * logits).item() / temperature.tau;
        dloss_dlog_tau = log_tau_gradient(temperature, dloss_dtau, log_tau);
    }

    std::vector<Var> inputs{q, p};
    if (negatives.defined()) inputs.push_back(negatives);
    if (log_tau.defined()) inputs.push_back(log_tau);
    return Var::from_op(
        "infonce", std::move(loss), inputs,
        [q = q.value(), candidates, G = dloss_dlogits, dloss_dlog_tau, inverse_tau = 1.0 / temperature.tau, N,
         has_negatives = negatives.defined()](const Tensor& dy) -> Grads {
            double scale = dy.item() * inverse_tau;
            Tensor dq = matmul(G, candidates) * scale;                           // G · C / tau     [N, d]
            Tensor dcandidates = matmul(G, q, Transpose::First) * scale;         // G^T · q / tau   [N+M, d]
            Grads grads{dq, slice(dcandidates, 0, 0, N)};                        // dL/dp           [N, d]
            if (has_negatives)
                grads.push_back(slice(dcandidates, 0, N, dcandidates.size(0)));  // dL/dnegatives   [M, d]
            if (dloss_dlog_tau.defined()) grads.push_back(dloss_dlog_tau * dy.item());
            return grads;
        });
}

// Symmetric InfoNCE with both logit matrices (derivation: docs/derivations/infonce_symmetric.md).
//   a = q C^T / tau [N, N+M]   b = p q^T / tau [N, N]   A = (P_a - Y) / 2N   B = (P_b - Y) / 2N
//   dL/dq = (A · C + B^T · p) / tau    dL/dC = A^T · q / tau (+ B · q / tau on the rows of p)
//   dL/dtau = -(1/tau) ( sum_ij A_ij a_ij + sum_ij B_ij b_ij )
Var infonce_symmetric_reference(const Var& q, const Var& p, const Var& negatives, const Var& log_tau, double tau) {
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
    Tensor loss = Tensor::scalar((q_to_p.loss_sum().item() + p_to_q.loss_sum().item()) / (2.0 * N), q.dtype())
                      .to(q.value().device());

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

}  // namespace nce::losses
