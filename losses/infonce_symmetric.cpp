#include "losses/infonce_symmetric.h"

#include <cmath>

#include "losses/infonce.h"
#include "losses/infonce_rows.h"
#include "losses/loss_common.h"
#include "losses/random_inputs.h"
#include "losses/worked_example.h"

namespace nce::losses {

// Symmetric InfoNCE: InfoNCE both ways, averaged; the negatives take part in q->p only.
//   q: [N, d]   p: [N, d]   negatives: [M, d]   C = [p; negatives]: [N+M, d]
//   a = q C^T / tau    [N, N+M]   b = p q^T / tau    [N, N]   (row i's positive: column i)
//   L = 1/2 [ (1/N) sum_i ( lse_j a_ij - a_ii ) + (1/N) sum_i ( lse_j b_ij - b_ii ) ]
//
// The closed form, derived step by step in docs/derivations/infonce_symmetric.md:
//   A = (P_a - Y) / 2N   B = (P_b - Y) / 2N   G = dL/da = A + [B^T | 0]   [N, N+M]
//   dL/dq = G C / tau    dL/dC = G^T q / tau    dL/dlog_tau = -sum_ij G_ij a_ij = -sum_i q_i·dq_i
// infonce_symmetric_sweep (losses/infonce_blocks.h) computes them during the forward, block
// by block, and the node's backward multiplies them by dy. The unfused form, with A and B as
// two matrices and one engine op per line: infonce_symmetric_reference.
Var infonce_symmetric(const Var& q, const Var& p, const Var& negatives, const Var& log_tau, double tau,
                      LogitBlocking blocking) {
    check_infonce_inputs(q, p, negatives, tau, "infonce_symmetric");
    Temperature temperature = resolve_temperature(log_tau, tau, "infonce_symmetric");
    logit_block_rows(blocking, q.size(0), q.size(0), q.dtype());  // checks block_rows
    std::vector<Var> inputs{q, p};
    if (negatives.defined()) inputs.push_back(negatives);
    if (log_tau.defined()) inputs.push_back(log_tau);
    if (q.value().device() != Device::CPU) {
        // On a device: the mean of two one-direction sweeps (infonce_rows.h), q against
        // C = [p; negatives] (a) and p against q (b):
        //   dq = (dq_a + dC_b) / 2   dp = (dC_a[:N] + dq_b) / 2   dneg = dC_a[N:] / 2
        //   dL/dtau = (dL_a/dtau + dL_b/dtau) / 2
        const bool with_gradient = any_needs_gradient(inputs);
        const int64_t N = q.size(0);
        Tensor candidates = negatives.defined() ? concat({p.value(), negatives.value()}, 0) : p.value();
        InfonceRows a = infonce_rows(q.value(), candidates, temperature.tau, with_gradient, blocking.block_rows);
        InfonceRows b = infonce_rows(p.value(), q.value(), temperature.tau, with_gradient, blocking.block_rows);
        Grads at_unit_dy;
        if (with_gradient) {
            at_unit_dy = {(a.dq + b.dcandidates) * 0.5, (a.dcandidates.rows(0, N) + b.dq) * 0.5};
            if (negatives.defined()) at_unit_dy.push_back(a.dcandidates.rows(N, candidates.size(0)) * 0.5);
            if (log_tau.defined())
                at_unit_dy.push_back(log_tau_gradient(temperature, (a.dloss_dtau + b.dloss_dtau) * 0.5, log_tau));
        }
        return Var::from_op("infonce_symmetric", (a.loss + b.loss) * 0.5, inputs, times_dy(std::move(at_unit_dy)));
    }
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
    // The page's example: infonce's two pairs and learnable tau = 0.5, plus one extra
    // negative, so that G = A + [B^T | 0] shows its zero column.
    loss.worked_example = [] {
        WorkedExample example;
        example.inputs = {{"q", matrix({{0.6, 0.8}, {1.0, 0.0}})},
                          {"p", matrix({{0.8, 0.6}, {0.0, 1.0}})},
                          {"neg", matrix({{-0.6, 0.8}})},
                          {"log_tau", Tensor::scalar(std::log(0.5), Dtype::Float64)}};
        example.steps = [](const LossArguments& arguments) {
            Tensor q = arguments.input("q").value(), p = arguments.input("p").value();
            Tensor candidates = concat({p, arguments.input("neg").value()}, 0);  // C [N+M, d]
            double tau = std::exp(arguments.input("log_tau").value().item());
            int64_t N = q.size(0), M = candidates.size(0) - N;
            Tensor a = matmul(q, candidates, Transpose::Second) / tau;                               // [N, N+M]
            Tensor b = matmul(p, q, Transpose::Second) / tau;                                        // [N, N]
            Tensor targets = concat({identity(N), Tensor::zeros({N, M}, Dtype::Float64)}, 1);        // Y [N, N+M]
            Tensor A = (softmax(a) - targets) / (2.0 * N);                                           // [N, N+M]
            Tensor B = (softmax(b) - identity(N)) / (2.0 * N);                                       // [N, N]
            Tensor G = A + concat({transpose(B, 0, 1), Tensor::zeros({N, M}, Dtype::Float64)}, 1);  // [N, N+M]
            Tensor dq = matmul(G, candidates) / tau;                                                 // [N, d]
            Tensor dcandidates = matmul(G, q, Transpose::First) / tau;                               // [N+M, d]
            return std::vector<DerivationStep>{
                {"tau", "exp(log_tau)", Tensor::scalar(tau, Dtype::Float64)},
                {"a", "q C^T / tau", a},
                {"P_a", "softmax of each row of a", softmax(a)},
                {"b", "p q^T / tau = (first N columns of a)^T", b},
                {"P_b", "softmax of each row of b", softmax(b)},
                {"A", "(P_a - Y) / 2N", A},
                {"B", "(P_b - Y) / 2N", B},
                {"G", "A + [B^T | 0]", G},
                {"dq", "G C / tau", dq},
                {"dp", "(G^T q / tau) rows [0, N)", slice(dcandidates, 0, 0, N)},
                {"dneg", "(G^T q / tau) rows [N, N+M)", slice(dcandidates, 0, N, N + M)},
                {"dlog_tau", "-sum_ij G_ij a_ij", -sum(G * a)},
                {"-sum_i q_i.dq_i", "the same number, as the fused kernel forms it", -sum(q * dq)}};
        };
        return example;
    };
    return loss;
}

}  // namespace nce::losses
