// The query groups of a batch, G(i) = { j : qid_j = qid_i }, as masks on the inputs' device:
// what the grouped losses (multi_positive, multi_positive_in, rank_infonce,
// hard_negative_infonce, relaxed_hard_negative) build their targets from.
//
// qid has been read on the host once already (read_ids checks it); here it is numbered
// densely, g_i in 0, 1, ... by first appearance, an O(N) pass over N integers, and only that
// vector g [N] is copied to the device. The [N, N] mask is made there, from g_i - g_j:
//   M_ij = 1 where g_i = g_j (qid_j = qid_i, so M_ii = 1), else 0
// The dense numbers are below N, so they are exact in float64 whatever the ids are (an
// int64 id above 2^53 would not be, converted as it is).
#pragma once
#include <cstdint>
#include <vector>

#include "engine/nce.h"

namespace nce::losses {

struct QueryGroups {
    Tensor same_query;          // M [N, N], float64, on the device asked for
    int64_t ordered_pairs = 0;  // K = sum_i (|G(i)| - 1): the pairs (i, j), i != j, of one group
};

QueryGroups query_groups(const std::vector<int64_t>& qid, Device device);

// I [n, n], float64, made on `device`.
Tensor identity_on(int64_t n, Device device);

}  // namespace nce::losses
