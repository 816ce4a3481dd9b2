#include "losses/infonce_expanded.h"

#include <map>

#include "losses/infonce.h"
#include "losses/loss_common.h"

namespace nce::losses {
namespace {

// l = s / tau: divided by exp(log_tau) when tau is learnable (and above its floor), else
// multiplied by the constant 1/tau.
Var over_temperature(const Var& similarities, const Var& log_tau, const Temperature& temperature) {
    if (temperature.learnable && !temperature.clamped) return similarities / exp(log_tau);
    return similarities * (1.0 / temperature.tau);
}

// L = -(1/N) sum_i log P_ii with log P = log_softmax of each row of l [N, C]: the positive of
// row i is column i, picked out by the constant one-hot Y [N, C] (Y_ij = 1 where j = i).
Var mean_positive_cross_entropy(const Var& logits) {
    int64_t N = logits.size(0), columns = logits.size(1);
    std::vector<double> one_hot(static_cast<size_t>(N * columns), 0.0);
    for (int64_t i = 0; i < N; ++i) one_hot[static_cast<size_t>(i * columns + i)] = 1.0;
    Var Y(Tensor::from_vector(one_hot, {N, columns}, logits.dtype()));
    Var log_probabilities = log_softmax(logits);                 // log P   [N, C]
    Var positives = log_probabilities * Y;                       // log P_ii on the diagonal, 0 elsewhere
    return sum(positives) * (-1.0 / static_cast<double>(N));     // L       []
}

}  // namespace

// q [N, d], p [N, d], negatives [M, d]:   C = [p; negatives]   l = q C^T / tau   L = -(1/N) sum_i log P_ii
Var infonce_expanded(const Var& q, const Var& p, const Var& negatives, const Var& log_tau, double tau) {
    check_infonce_inputs(q, p, negatives, tau, "infonce");
    Temperature temperature = resolve_temperature(log_tau, tau, "infonce");
    Var candidates = negatives.defined() ? concat({p, negatives}, 0) : p;                       // C [N+M, d]
    Var logits = over_temperature(matmul(q, candidates, Transpose::Second), log_tau, temperature);  // l [N, N+M]
    return mean_positive_cross_entropy(logits);
}

// a = q C^T / tau [N, N+M] (q to its candidates)   b = p q^T / tau [N, N] (p back to q)
// L = (L_a + L_b) / 2, each the mean over rows of -log P_ii
Var infonce_symmetric_expanded(const Var& q, const Var& p, const Var& negatives, const Var& log_tau, double tau) {
    check_infonce_inputs(q, p, negatives, tau, "infonce_symmetric");
    Temperature temperature = resolve_temperature(log_tau, tau, "infonce_symmetric");
    Var candidates = negatives.defined() ? concat({p, negatives}, 0) : p;                              // C [N+M, d]
    Var q_to_p = over_temperature(matmul(q, candidates, Transpose::Second), log_tau, temperature);     // a
    Var p_to_q = over_temperature(matmul(p, q, Transpose::Second), log_tau, temperature);              // b
    return (mean_positive_cross_entropy(q_to_p) + mean_positive_cross_entropy(p_to_q)) * 0.5;
}

const ExpandedLoss* find_expanded_loss(const std::string& name) {
    static const std::map<std::string, ExpandedLoss> expanded = {
        {"infonce",
         [](const LossArguments& arguments) {
             return infonce_expanded(arguments.input("q"), arguments.input("p"), arguments.optional("neg"),
                                     arguments.optional("log_tau"), arguments.number("tau"));
         }},
        {"infonce_symmetric",
         [](const LossArguments& arguments) {
             return infonce_symmetric_expanded(arguments.input("q"), arguments.input("p"), arguments.optional("neg"),
                                               arguments.optional("log_tau"), arguments.number("tau"));
         }},
    };
    auto it = expanded.find(name);
    return it == expanded.end() ? nullptr : &it->second;
}

std::vector<std::string> expanded_loss_names() { return {"infonce", "infonce_symmetric"}; }

}  // namespace nce::losses
