// The InfoNCE losses op by op: every line of the derivation one engine op, differentiated by
// autograd, so that `nce graph infonce --expanded` draws each step (matmul, the temperature,
// log_softmax, picking the positives) where the registered loss is one fused node. They equal
// infonce() and infonce_symmetric() in value and gradients (tests/test_graph_dot.cpp); they
// keep every intermediate matrix, so they are for reading and drawing, not for training.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "losses/loss.h"

namespace nce::losses {

// Same inputs and checks as infonce() / infonce_symmetric(). A learnable tau below its floor
// (1e-4) is the constant 1e-4 here, so log_tau then gets no gradient (the fused loss: zero).
Var infonce_expanded(const Var& q, const Var& p, const Var& negatives, const Var& log_tau, double tau = 0.05);
Var infonce_symmetric_expanded(const Var& q, const Var& p, const Var& negatives, const Var& log_tau,
                               double tau = 0.05);

// A registered loss's expanded form, called as its `compute` is.
using ExpandedLoss = std::function<Var(const LossArguments&)>;
// nullptr when the loss `name` has no expanded form.
const ExpandedLoss* find_expanded_loss(const std::string& name);
// The losses that have one, in the registry's order.
std::vector<std::string> expanded_loss_names();

}  // namespace nce::losses
