#include "losses/infonce.h"

#include <cmath>

#include "losses/infonce_rows.h"
#include "losses/loss_common.h"
#include "losses/random_inputs.h"
#include "losses/worked_example.h"

namespace nce::losses {

// On a device the values are not read here (that would wait on it, once per input): a NaN
// or Inf in q, p or the negatives makes the loss NaN or Inf, which the caller reads anyway.
void check_infonce_inputs(const Var& q, const Var& p, const Var& negatives, double tau, const char* loss) {
    const bool on_host = !q.defined() || q.value().device() == Device::CPU;
    auto check = on_host ? check_matrix : check_matrix_shape;
    check(q, loss, "q");
    check(p, loss, "p");
    check_same_shape(q, p, loss, "q", "p");
    NCE_CHECK(p.dtype() == q.dtype(), "{}: p is {} but q is {}; give every embedding the same dtype", loss,
              dtype_name(p.dtype()), dtype_name(q.dtype()));
    check_min_rows(q.size(0), 2, loss, "N (rows of q, p; the other rows are the negatives)");
    if (negatives.defined()) {
        check(negatives, loss, "neg");
        check_same_dim(q, negatives, loss, "q", "neg");
        NCE_CHECK(negatives.dtype() == q.dtype(), "{}: neg is {} but q is {}; give every embedding the same dtype",
                  loss, dtype_name(negatives.dtype()), dtype_name(q.dtype()));
    }
    NCE_CHECK(tau > 0 && std::isfinite(tau), "{}: parameter tau must be a finite number > 0, got {}", loss, tau);
}

// InfoNCE, one direction.
//   q: [N, d]   p: [N, d]   negatives: [M, d]   C = [p; negatives]: [N+M, d]
//   l = q C^T / tau   [N, N+M]      L = (1/N) sum_i ( lse_j l_ij - l_ii )   (row i's positive: column i)
//
// The closed form, derived step by step in docs/derivations/infonce.md:
//   G = dL/dl = (P - Y) / N    dL/dq = G C / tau    dL/dC = G^T q / tau (rows of p, then negatives)
//   dL/dlog_tau = -sum_ij G_ij l_ij = -sum_i q_i·dq_i   (0 while tau is clamped at 1e-4)
// infonce_sweep (losses/infonce_blocks.h) computes them during the forward, a block of rows
// of l at a time: L is a scalar, so its gradients at dy = 1 are known as soon as L is, and the
// node's backward multiplies them by dy. No N x (N+M) matrix outlives the forward. When no
// gradient will be asked for (no_grad, or no input needs one) the sweep computes L alone.
// The same lines with the whole matrix, one engine op each: infonce_reference.
Var infonce(const Var& q, const Var& p, const Var& negatives, const Var& log_tau, double tau, LogitBlocking blocking) {
    check_infonce_inputs(q, p, negatives, tau, "infonce");
    Temperature temperature = resolve_temperature(log_tau, tau, "infonce");
    logit_block_rows(blocking, q.size(0), q.size(0), q.dtype());  // checks block_rows
    std::vector<Var> inputs{q, p};
    if (negatives.defined()) inputs.push_back(negatives);
    if (log_tau.defined()) inputs.push_back(log_tau);
    if (q.value().device() != Device::CPU) {  // the same sweep in engine ops, on the device (infonce_rows.h)
        const bool with_gradient = any_needs_gradient(inputs);
        Tensor candidates = negatives.defined() ? concat({p.value(), negatives.value()}, 0) : p.value();
        InfonceRows rows = infonce_rows(q.value(), candidates, temperature.tau, with_gradient, blocking.block_rows);
        Grads at_unit_dy;
        if (with_gradient) {
            const int64_t N = q.size(0), K = candidates.size(0);
            at_unit_dy = {rows.dq, rows.dcandidates.rows(0, N)};
            if (negatives.defined()) at_unit_dy.push_back(rows.dcandidates.rows(N, K));
            if (log_tau.defined()) at_unit_dy.push_back(log_tau_gradient(temperature, rows.dloss_dtau, log_tau));
        }
        return Var::from_op("infonce", rows.loss, inputs, times_dy(std::move(at_unit_dy)));
    }
    InfonceSweep sweep = infonce_sweep(q.value(), p.value(), negatives.value(), temperature.tau,
                                       any_needs_gradient(inputs), blocking);
    Tensor loss = Tensor::scalar(sweep.loss, q.dtype());
    Tensor dloss_dlog_tau = sweep.dq.defined() ? log_tau_gradient(temperature, sweep.dloss_dtau, log_tau) : Tensor();
    return Var::from_op("infonce", std::move(loss), inputs, scaled_gradients(sweep, dloss_dlog_tau));
}

Var infonce(const Var& q, const Var& p, const Var& negatives, const Var& log_tau, double tau) {
    return infonce(q, p, negatives, log_tau, tau, LogitBlocking{});
}

bool any_needs_gradient(const std::vector<Var>& inputs) {
    if (!grad_enabled()) return false;
    for (const Var& input : inputs)
        if (input.requires_grad()) return true;
    return false;
}

// The gradients at dy = 1 from a sweep, each times dy:  dL/dx = dy · (dL/dx at dy = 1).
BackwardFn scaled_gradients(const InfonceSweep& sweep, const Tensor& dloss_dlog_tau) {
    Grads at_unit_dy{sweep.dq, sweep.dp};                                         // [N, d], [N, d]
    if (sweep.dnegatives.defined()) at_unit_dy.push_back(sweep.dnegatives);      // [M, d]
    if (dloss_dlog_tau.defined()) at_unit_dy.push_back(dloss_dlog_tau);
    return times_dy(std::move(at_unit_dy));
}

// dL/dx = dy · (dL/dx at dy = 1), dy a one-element tensor that stays on its device.
BackwardFn times_dy(Grads at_unit_dy) {
    return [at_unit_dy = std::move(at_unit_dy)](const Tensor& dy) -> Grads {
        Grads grads;
        for (const Tensor& gradient : at_unit_dy) grads.push_back(gradient * dy.reshape({}).to(gradient.dtype()));
        return grads;
    };
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
    // The page's example: two unit pairs, a learnable tau of 0.5, no extra negatives (C = p).
    loss.worked_example = [] {
        WorkedExample example;
        example.inputs = {{"q", matrix({{0.6, 0.8}, {1.0, 0.0}})},
                          {"p", matrix({{0.8, 0.6}, {0.0, 1.0}})},
                          {"log_tau", Tensor::scalar(std::log(0.5), Dtype::Float64)}};
        example.steps = [](const LossArguments& arguments) {
            Tensor q = arguments.input("q").value(), p = arguments.input("p").value();
            double tau = std::exp(arguments.input("log_tau").value().item());
            double N = static_cast<double>(q.size(0));
            Tensor l = matmul(q, p, Transpose::Second) / tau;     // [N, N]
            Tensor G = (softmax(l) - identity(q.size(0))) / N;    // [N, N]
            Tensor dq = matmul(G, p) / tau;                       // [N, d]
            return std::vector<DerivationStep>{
                {"tau", "exp(log_tau)", Tensor::scalar(tau, Dtype::Float64)},
                {"l", "q C^T / tau", l},
                {"P", "softmax of each row of l", softmax(l)},
                {"G", "(P - Y) / N", G},
                {"dq", "G C / tau", dq},
                {"dp", "G^T q / tau", matmul(G, q, Transpose::First) / tau},
                {"dlog_tau", "tau dL/dtau = -sum_ij G_ij l_ij", -sum(G * l)},
                {"-sum_i q_i.dq_i", "the same number, as the fused kernel forms it", -sum(q * dq)}};
        };
        return example;
    };
    return loss;
}

}  // namespace nce::losses
