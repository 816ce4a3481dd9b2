// Data parallelism: every rank holds a replica of the model, computes the gradient of its
// share of the global loss, and the ranks sum those gradients, so every replica takes the
// very update one process would take on the whole global batch.
//
// A step, on every rank:
//   broadcast_parameters(model)            once, before the first step: rank 0's weights everywhere
//   share = distributed::infonce(q_r, p_r, ...)   this rank's rows against all gathered candidates
//   share.backward()                       gather_rows' backward reduce-scatters the candidates' gradients
//   all_reduce_gradients(model)            sum over ranks: the global batch's gradient on every rank
//   optimizer.step()                       identical on every rank, so the replicas stay identical
//
// With GradCache (nn/grad_cache.h) the loss and backward lines become one call on the local
// slice, whose loss is the distributed one: the whole slice's embeddings are gathered once,
// their gradient comes back by the reduce-scatter, then the chunked re-forward runs locally:
//   nn::grad_cache_step(model, model, local_batch,
//       [](const Var& q, const Var& p, const Var& log_tau) { return distributed::infonce(q, p, Var(), log_tau); },
//       mini_batch_size, generator);
//
// The sum is right, not the mean: each share already carries 1/N_global, so the summed
// gradient is the global loss's gradient. (Averaging it over the world size would shrink it
// K times: the bug this layout avoids.)
#pragma once
#include <vector>

#include "nn/model.h"
#include "nn/trainer.h"

namespace nce::distributed {

// Overwrites every parameter of `module` on every rank with the root's.
void broadcast_parameters(nn::Module& module, int root = 0);

// Sums the accumulated gradient of each parameter over the ranks, in place, in one message.
// A parameter whose gradient is undefined on every rank stays undefined (the optimizer skips
// it, as on one process); one that has a gradient on some rank gets the sum, zeros standing
// in where it was undefined.
void all_reduce_gradients(const std::vector<Var*>& parameters);
void all_reduce_gradients(nn::Module& module);

// The largest difference, over parameters and ranks, between this replica and rank 0's: 0
// when the replicas agree. For checks; a collective.
double max_parameter_difference_from_main(nn::Module& module);

// A Trainer loss callback for data parallelism: runs `local_loss` (this rank's share of the
// global loss, with a graph or with gradients ready, as GradCache gives them), back-propagates
// it when needed, all-reduces the gradients of `model`, and returns the global loss with
// the gradients ready and the global sample count.
nn::BatchLossFunction data_parallel_loss(nn::BatchLossFunction local_loss, nn::EmbeddingModel& model);

// A Trainer evaluation callback for data parallelism: rank 0 scores the model (its replica
// equals every other), the others wait, and every rank returns rank 0's score, so every
// rank takes the same early-stopping decision. An error on rank 0 reaches the others
// through abort_world (distributed/world.h).
nn::EvaluationFunction evaluate_on_main_rank(nn::EvaluationFunction evaluate);

// Trainer options for this rank: only rank 0 shows progress, writes the metrics log and the
// checkpoints; the other ranks' paths are cleared. The dropout seed is offset by the rank so
// the replicas draw different masks for their different examples.
nn::TrainerOptions options_for_this_rank(nn::TrainerOptions options);

}  // namespace nce::distributed
