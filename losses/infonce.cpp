#include "losses/infonce.h"

#include <cmath>

#include "losses/loss_common.h"
#include "losses/random_inputs.h"
#include "losses/softmax_rows.h"

namespace nce::losses {

void check_infonce_inputs(const Var& q, const Var& p, const Var& negatives, double tau, const char* loss) {
    check_matrix(q, loss, "q");
    check_matrix(p, loss, "p");
    check_same_shape(q, p, loss, "q", "p");
    NCE_CHECK(p.dtype() == q.dtype(), "{}: p is {} but q is {}; give every embedding the same dtype", loss,
              dtype_name(p.dtype()), dtype_name(q.dtype()));
    check_min_rows(q.size(0), 2, loss, "N (rows of q, p; the other rows are the negatives)");
    if (negatives.defined()) {
        check_matrix(negatives, loss, "neg");
        check_same_dim(q, negatives, loss, "q", "neg");
        NCE_CHECK(negatives.dtype() == q.dtype(), "{}: neg is {} but q is {}; give every embedding the same dtype",
                  loss, dtype_name(negatives.dtype()), dtype_name(q.dtype()));
    }
    NCE_CHECK(tau > 0 && std::isfinite(tau), "{}: parameter tau must be a finite number > 0, got {}", loss, tau);
}

// InfoNCE, one direction.
//   q: [N, d]   p: [N, d]   negatives: [M, d]   C = [p; negatives]: [N+M, d]
//   l = q C^T / tau                                   [N, N+M]
//   L = (1/N) sum_i ( lse_j l_ij - l_ii )             the positive of row i is column i
//
// Backward (each step in docs/derivations/infonce.md):
//   dL/dl   = G = (P - Y) / N                         [N, N+M]   P = softmax rows of l, Y one-hot at j = i
//   dL/dq   = G · C / tau                             [N, N+M]·[N+M, d]
//   dL/dC   = G^T · q / tau                           [N+M, N]·[N, d]: rows 0..N-1 -> p, rows N.. -> negatives
//   dL/dtau = -(1/tau) sum_ij G_ij l_ij               since l_ij = q_i·c_j / tau gives dl_ij/dtau = -l_ij / tau
//   dL/dlog_tau = tau · dL/dtau                       (0 while tau is clamped at 1e-4)
// The node's output gradient dy (a scalar) multiplies each of them.
Var infonce(const Var& q, const Var& p, const Var& negatives, const Var& log_tau, double tau) {
    check_infonce_inputs(q, p, negatives, tau, "infonce");
    Temperature temperature = resolve_temperature(log_tau, tau, "infonce");
    int64_t N = q.size(0);

    Tensor candidates = negatives.defined() ? concat({p.value(), negatives.value()}, 0) : p.value();  // C [N+M, d]
    Tensor logits = matmul(q.value(), candidates, Transpose::Second) / temperature.tau;              // l [N, N+M]
    std::vector<int64_t> positive_column(N);
    for (int64_t i = 0; i < N; ++i) positive_column[i] = i;
    SoftmaxCrossEntropy rows = softmax_cross_entropy_rows(logits, positive_column);
    Tensor loss = Tensor::scalar(rows.loss_sum / N, q.dtype());

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

LossDefinition infonce_definition() {
    LossDefinition loss;
    loss.name = "infonce";
    loss.inputs = {{"q", InputKind::Embedding},
                   {"p", InputKind::Embedding},
                   {"neg", InputKind::Embedding, /*required=*/false},
                   {"log_tau", InputKind::Scalar, /*required=*/false}};
    loss.params = {{"tau", "0.05", ParamRule::Positive, {}}};
    loss.compute = [](const LossArguments& arguments) {
        return infonce(arguments.input("q"), arguments.input("p"), arguments.optional("neg"),
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
