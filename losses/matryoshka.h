// matryoshka: InfoNCE on nested prefixes of the embeddings (Matryoshka representation
// learning), so that the first m columns of an embedding are a usable embedding on their own.
//   for each prefix size m in dims:  u = rows of q[:, :m] re-normalised to unit length,
//                                    v = rows of p[:, :m] likewise
//   L = sum_m w_m · infonce(u, v) / sum_m w_m      (infonce with the same tau)
// Derivation: docs/derivations/matryoshka.md.
//
// One node whose backward is the closed form: each prefix's InfoNCE gradient (infonce's own
// closed form: on the CPU from the same fused kernel, losses/infonce_blocks.h; on another
// device from the whole logit matrix, so every tensor stays there) taken back through the
// re-normalisation, d(a/|a|)/da = (I - u u^T)/|a|, and the prefix slice. No autograd runs
// through primitive ops inside the loss (the spec's rule for every loss).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "losses/loss.h"

namespace nce::losses {

// q, p [N, d] (N >= 2), one float dtype; log_tau as infonce's (undefined: the fixed `tau` > 0,
// else tau = max(exp(log_tau), 1e-4) and `tau` is unused but still checked).
// dims: the prefix sizes, strictly ascending, each in [1, d], the last = d; empty: the
// default rule (matryoshka_default_dims). weights: one per prefix, each finite and > 0;
// empty: all 1. Every row of every prefix of q and p must be nonzero (it is re-normalised).
// Returns L, shape [], in q's dtype.
Var matryoshka(const Var& q, const Var& p, const Var& log_tau, double tau = 0.05, const std::vector<int64_t>& dims = {},
               const std::vector<double>& weights = {});

// The spec's default prefix sizes: d/8, d/4, d/2, d, each kept where it is a whole number
// >= 1 (8 divides d for d/8, and so on). d = 768 gives 96, 192, 384, 768; d = 12 gives 3, 6,
// 12; d = 2 gives 1, 2; d = 1 gives 1. Those kept are distinct and ascending by construction.
std::vector<int64_t> matryoshka_default_dims(int64_t d);

// The parameters' text (`--set dims=64,128,256 --set weights=1,1,2`): comma-separated entries,
// spaces around an entry allowed; "" gives an empty list (the default). A dims entry must be
// written in digits ("64"); a weights entry must be a finite number. Throws one line naming
// the parameter and the entry. The ranges (ascending, <= d, > 0, the count) are matryoshka's checks.
std::vector<int64_t> parse_matryoshka_dims(const std::string& text);
std::vector<double> parse_matryoshka_weights(const std::string& text);

LossDefinition matryoshka_definition();

}  // namespace nce::losses
