// The distributed InfoNCE-family losses: each rank passes the embeddings of its own slice
// of the global batch and gets its share of the loss of the whole global batch.
//
// Each rank all-gathers the candidates (gather_rows), computes the loss rows of its own
// anchors against every gathered candidate, the positive of its local row i sitting at
// column (first row of this rank) + i, and scales them by 1 / (the global row count), so
// that the shares summed over the ranks are exactly the single-process loss on the
// concatenated batch, and the gradients, carried back by gather_rows' reduce-scatter and
// summed over ranks by all_reduce_gradients (distributed/data_parallel.h), are exactly its
// gradients. The global loss is all_reduce_sum(share.value().item()).
//
// Every rank must call the same loss with the same parameters. Slices may be uneven (every
// rank needs at least one row); the checks that concern the whole batch use the row counts
// all ranks see, so they throw on every rank alike; a check only one rank can fail (a NaN
// in its own rows) throws there alone, so run under abort_world (distributed/world.h), as
// `nce` does, and the others are not left waiting. In a one-process world each is the
// single-process loss of losses/.
#pragma once
#include "engine/nce.h"

namespace nce::distributed {

// losses::infonce over the global batch. q, p: this rank's [n_r, d]; negatives: this rank's
// hard negatives [m_r, d] or undefined (undefined on every rank, or defined on every rank,
// m_r = 0 allowed). The candidates are C = [P; Negatives], every rank's p, then every
// rank's negatives, as the single process would stack them. Global N >= 2.
Var infonce(const Var& q, const Var& p, const Var& negatives, const Var& log_tau, double tau = 0.05);

// losses::infonce_symmetric over the global batch: q->p against [P; Negatives], p->q
// against Q (negatives take no part), averaged.
Var infonce_symmetric(const Var& q, const Var& p, const Var& negatives, const Var& log_tau, double tau = 0.05);

// losses::ntxent over the global batch. z: this rank's [2 B_r, d], its first view then its
// second view, as each rank would pass it alone; the global batch is [V1; V2], every rank's
// first view, then every rank's second view. Global B >= 2.
Var ntxent(const Var& z, const Var& log_tau, double tau = 0.1, bool mask_self = true);

// The whole global batch's loss from this rank's share (a collective: every rank calls it).
double global_loss(const Var& share);

}  // namespace nce::distributed
