// anchor_rows_infonce: the InfoNCE rows of some anchors against a shared set of candidates,
// each row with its own positive column and, optionally, one column left out (the anchor
// itself, for NT-Xent). It is the piece every distributed InfoNCE-family loss computes on
// one rank: its own anchors against all gathered candidates, the labels offset by where
// its rows sit in the global batch.
//   l_ij = a_i·c_j / tau                     a: [n, d]   c: [C, d]   l: [n, C]
//   L = scale · sum_i ( lse_{j != excluded(i)} l_ij - l_i,positive(i) )
#pragma once
#include <cstdint>
#include <vector>

#include "engine/nce.h"

namespace nce::distributed {

// anchors [n, d] (n >= 0), candidates [C, d] (C >= 2), same float dtype; positive_column[i]
// in [0, C); excluded_column[i] in [0, C) and != positive_column[i], or -1 for none (an
// empty vector: none for every row). log_tau and tau as in losses::infonce. `loss` names
// the caller in error messages. Returns L, shape [].
Var anchor_rows_infonce(const Var& anchors, const Var& candidates, const std::vector<int64_t>& positive_column,
                        const std::vector<int64_t>& excluded_column, const Var& log_tau, double tau, double scale,
                        const char* loss);

}  // namespace nce::distributed
