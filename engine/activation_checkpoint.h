// Activation checkpointing ("gradient checkpointing"): trade compute for memory by not
// keeping a block's intermediate values, and computing them again in the backward.
//
// Why it saves memory. Back-propagating through y = f(x; θ) needs f's intermediate values
// (an attention layer's q, k, v, its probabilities, the feed-forward block's hidden
// [B, T, 4D] tensor, ...): every op's backward closure holds the ones it needs until the
// backward reaches it. A stack of L layers therefore keeps L layers' worth of them alive
// between the forward and the backward. Checkpointing keeps only each layer's input x:
//
//   forward:   y = f(x; θ) under NoGradGuard: no nodes, so the intermediates are freed as
//              soon as the layer returns. One node is recorded, "checkpoint", with inputs
//              {x, θ_1, ..., θ_n} and output y.
//   backward:  given dL/dy, run f again with gradients on, on fresh leaves x' and θ'_i
//              holding the same values, then back-propagate dL/dy through that recomputed
//              graph: dL/dx = x'.grad(), dL/dθ_i = θ'_i.grad(). Return them as the node's
//              input gradients. Only one layer's intermediates exist at a time.
//
// The cost: f's forward runs twice per step (about a third more compute for a transformer).
//
// The same gradients, bit for bit. The recomputation must redo the exact same arithmetic:
//   * Random draws: dropout masks come from a counter-based Generator (random.h), so the
//     forward records the generator's offset before f, and the backward sets it back there,
//     runs f (which draws the same masks), and restores the offset it found.
//   * Parameter gradients: the recomputed graph accumulates into fresh leaves θ'_i, not into
//     θ_i; their gradients are handed back as the checkpoint node's input gradients, so the
//     backward engine adds them into θ_i.grad() along the same edge-by-edge path a plain
//     graph uses (a parameter read once by f gets one gradient per call of f, summed in the
//     order the calls' nodes are reached, then added into grad() once). Accumulating into
//     θ_i.grad() directly from inside the recomputation would add in a different order when
//     the parameter is used by several calls (shared query/passage tower) or grad() already
//     holds a sum: (s + a) + b is not always s + (a + b) in floating point.
//   * dL/dx: inside the recomputation x' collects the gradients of its uses in the same
//     order as the plain graph visits the layer's nodes (the backward's order depends only
//     on the layer's own edges), and is passed on as one gradient.
//
// f must read its parameters through the Vars that `parameters` points to (a module's
// members): the backward swaps each for a fresh leaf while it recomputes, then puts it back.
// The parameters and the generator must outlive the backward, and the parameters' values
// must not change in between (an optimizer step comes after the backward anyway).
#pragma once
#include <functional>
#include <vector>

#include "engine/autograd.h"
#include "engine/random.h"

namespace nce {

// The function recomputed in the backward: x -> y; it may draw from the generator given
// to checkpoint() (and from no other).
using CheckpointedFunction = std::function<Var(const Var& input)>;

// y = function(input), keeping only `input` for the backward, as described above.
// `parameters`: every leaf the function reads (e.g. module.parameters()); `generator`: the
// one it draws dropout masks from, or null when it draws none. When gradients are off
// (NoGradGuard) or nothing needs one, it is simply function(input).
Var checkpoint(const CheckpointedFunction& function, const Var& input, const std::vector<Var*>& parameters,
               Generator* generator);

}  // namespace nce
