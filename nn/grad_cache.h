// GradCache: the exact gradient of an in-batch-negative loss over B pairs, holding the
// activations of only m pairs at a time (Gao et al., 2021, "Scaling Deep Contrastive
// Learning Batch Size under Memory Limited Setup").
//
// An in-batch loss couples every query with every passage, so it needs all B embeddings at
// once; but the encoder's activations, which dominate memory, are only needed to carry the
// loss's gradient back to the parameters. The chain rule splits there:
//
//   dL/dθ = sum over mini-batches k of  (dL/dE_k) · (dE_k/dθ)
//
// where E_k [m, d] are the embeddings of mini-batch k. dL/dE_k needs all embeddings but no
// encoder graph; (dE_k/dθ) needs mini-batch k's graph but nothing of the loss. So:
//   (a) embed every mini-batch without a graph, keeping only E_k;
//   (b) compute the loss on the concatenated embeddings, and dL/dE by backward;
//   (c) re-embed each mini-batch with a graph and back-propagate its slice dL/dE_k;
//       parameter gradients accumulate across mini-batches.
//
// Dropout. Step (c) must run the same function as step (a), so every dropout mask must be
// drawn again, identically. Masks come from a counter-based Generator: the draws depend only
// on (seed, offset), so step (a) records the offset before each mini-batch and step (c)
// restores it. Mini-batches are embedded in a fixed order, the queries' mini-batches first
// and then the passages', each of the first min(m, rows left) rows. Afterwards the
// generator stands where step (a) left it, so a GradCache step consumes the stream exactly
// as a plain step that encodes the same mini-batches, in the same order, with one graph:
// that plain step is the reference GradCache equals (tests/test_training.cpp). (Encoding
// all B rows in one call would draw the same number of values but lay them over the rows
// differently, so its masks differ; without dropout both references agree.)
#pragma once
#include <functional>

#include "nn/model.h"

namespace nce::nn {

// B query inputs and B passage inputs, each with its mask.
struct PairBatch {
    Tensor query_input;    // [B, T] int64 token ids, or [B, T, in_dim] float features
    Tensor query_mask;     // [B, T], nonzero = token
    Tensor passage_input;  // [B, T'] or [B, T', in_dim]
    Tensor passage_mask;   // [B, T']
};

// The loss over the two embedding matrices q_embeddings [B, d] and p_embeddings [B, d],
// given the model's learnable log-temperature (an undefined Var when it has none); e.g.
//   [](const Var& q, const Var& p, const Var& log_tau) { return losses::infonce(q, p, Var(), log_tau); }
using EmbeddingLoss = std::function<Var(const Var& q_embeddings, const Var& p_embeddings, const Var& log_tau)>;

// One GradCache step: accumulates dL/dθ into the grad() of every parameter of both towers
// (and of the log-temperature) and returns L. For a shared tower pass the same model twice;
// the log-temperature is the query tower's, or the passage tower's when the query tower
// has none. Dropout draws from `generator`, which ends where a plain step would leave it.
// Does not zero gradients: call zero_grad() before, as for any step.
double grad_cache_step(EmbeddingModel& query_model, EmbeddingModel& passage_model, const PairBatch& batch,
                       const EmbeddingLoss& loss, int64_t mini_batch_size, Generator& generator);

}  // namespace nce::nn
