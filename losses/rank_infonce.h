// rank_infonce: multi-positive InfoNCE whose positives are weighted by their rank (and
// optionally their score) within the query's group.
//   w~_j = exp(-rank_weight·rank_j·use_ranks) · exp(score_weight·sh_j·use_scores)
//   w_j  = w~_j / sum_{k in G(j)} w~_k
//   L    = (1/N) sum_i [ -sum_{j in G(i)} w_j log softmax_j(l_i) ],   l_ij = q_i·p_j / tau
// Derivation: docs/derivations/rank_infonce.md.
#pragma once
#include "losses/loss.h"

namespace nce::losses {

struct RankInfonceOptions {
    double tau = 0.1;            // > 0; ignored when log_tau is given
    double rank_weight = 0.1;    // >= 0
    double score_weight = 0.05;  // >= 0
    bool use_ranks = true;       // rank is then required
    bool use_scores = false;     // score is then required
};

// q, p [N, d] (N >= 2, same dtype); qid int64 [N]; rank [N] (0 = best; int64 or float) and
// score [N] (float), either undefined when its flag is off; log_tau as in multi_positive.
// The weights w are data: gradients flow through the logits only. Returns L, shape [].
Var rank_infonce(const Var& q, const Var& p, const Tensor& qid, const Tensor& rank, const Tensor& score,
                 const Var& log_tau, const RankInfonceOptions& options = {});

LossDefinition rank_infonce_definition();

}  // namespace nce::losses
