// Hard-negative mining: for each query, the passages an index ranks highest that are not
// positives of that query. Fed to a loss, they are the negatives the model most confuses
// with the answer.
//
//   mined[q] = the first K passages of query q's ranking that are not in positives[q]
//
// Rankings are ordered by score, ties by lower passage index (see exact_search.h), so the
// mined negatives are deterministic for an exact index.
#pragma once
#include <cstdint>

#include "eval/exact_search.h"
#include "eval/faiss_index.h"
#include "eval/metrics.h"

namespace nce::eval {

// From existing search results (indices [Q, depth] int64, best first; -1 entries, FAISS's
// "no hit", are skipped): int64 [Q, K]. Throws naming the query if its ranking holds fewer
// than K non-positives (search deeper).
Tensor hard_negatives_from_ranking(const Tensor& ranked_indices, const RelevantSets& positives,
                                   int64_t negatives_per_query);

// Searches as deep as needed (K + the most positives any query has) and mines: int64 [Q, K].
Tensor mine_hard_negatives(const Tensor& queries, const Tensor& corpus, const RelevantSets& positives,
                           int64_t negatives_per_query, const ExactSearchOptions& options = {});
Tensor mine_hard_negatives(const FaissIndex& index, const Tensor& queries, const RelevantSets& positives,
                           int64_t negatives_per_query);

// The flattened negative matrix a loss takes as `negatives`: the embeddings of the mined
// passages, query 0's K first, then query 1's, ...   passages [N, d], hard_negatives [Q, K]
// -> [Q·K, d].
Tensor hard_negative_embeddings(const Tensor& passages, const Tensor& hard_negatives);

}  // namespace nce::eval
