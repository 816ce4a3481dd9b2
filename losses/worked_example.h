// A loss's worked example, run: the page's steps, the loss, the gradients its backward
// returns, and the check that every closed-form gradient among the steps equals the backward's.
// `nce explain NAME` prints it; every page in docs/derivations/ shows that print, and
// tests/explain_pages_test.sh holds the pages to it.
#pragma once
#include <initializer_list>
#include <string>
#include <vector>

#include "losses/loss.h"

namespace nce::losses {

struct ClosedFormCheck {
    std::string input;         // "q"
    double max_difference;     // max |closed form - backward| over the entries
};

struct WorkedExampleRun {
    LossArguments arguments;             // the inputs and every parameter (defaults filled in)
    std::vector<DerivationStep> steps;
    double loss = 0;
    std::vector<std::pair<std::string, Tensor>> gradients;  // dL/d<input> from the backward, in input order
    std::vector<ClosedFormCheck> checks;                    // one per step named d<input>
};

// Runs `loss`'s worked example in float64. Throws naming the loss when it has none.
WorkedExampleRun run_worked_example(const LossDefinition& loss);

// For writing examples: a float64 matrix from its rows, {{0.6, 0.8}, {1.0, 0.0}}, and the
// n x n identity (the one-hot targets Y of a batch whose positive of row i is column i).
Tensor matrix(std::initializer_list<std::initializer_list<double>> rows);
Tensor identity(int64_t n);

// The example the grouped losses share, so that their pages can be read side by side:
// N = 3 unit pairs q, p [3, 2], rows 0 and 1 one query (qid 0) and row 2 another (qid 1),
// and a learnable tau of 0.5 (log_tau).
std::map<std::string, Tensor> grouped_example_inputs();
// M [N, N] from qid [N] (int64): 1 where qid_j = qid_i (j in G(i)), else 0; float64.
Tensor same_query_mask(const Tensor& qid);

// The last steps of an example whose logits are l = q p^T / tau, once G = dL/dl is known
// (docs/derivations/infonce.md, steps 2-4): dq = G p / tau, dp = G^T q / tau, and
// dlog_tau = -sum_ij G_ij l_ij, then the same number as -sum_i q_i·dq_i. Appended to `steps`.
void append_logit_gradient_steps(std::vector<DerivationStep>& steps, const Tensor& q, const Tensor& p,
                                 const Tensor& G, const Tensor& l, double tau);

// Agreement a closed form must reach with the backward (float64; both compute the same sums).
constexpr double kClosedFormTolerance = 1e-12;

}  // namespace nce::losses
