// Retrieval metrics, with the definitions of sentence-transformers' InformationRetrievalEvaluator
// (binary relevance). For one query with ranked list r_1, r_2, ... (best first), relevant set R,
// and hits_k = number of relevant passages among r_1..r_k:
//
//   accuracy@k  = 1 if hits_k > 0 else 0
//   precision@k = hits_k / k                         (k, even when the list is shorter)
//   recall@k    = hits_k / |R|
//   MRR@k       = 1 / (rank of the first relevant passage), 0 if none in the top k
//   NDCG@k      = DCG@k / IDCG@k,   DCG@k = sum_{i<=k, r_i in R} 1 / log2(i + 1)
//                 IDCG@k = sum_{i <= min(k, |R|)} 1 / log2(i + 1)   (all relevant ranked first)
//   MAP@k       = (sum over relevant r_i with i <= k of hits_i / i) / min(k, |R|)
//
// Each metric is the mean over queries. A query must have at least one relevant passage
// (sentence-transformers silently drops such queries; here it is an error, so nothing is
// dropped by accident).
//
// Ties: the metrics read only the order of the list. The searches in eval/ order passages with
// equal scores by lower passage index first, so a tie is decided by index, never by chance.
#pragma once
#include <cstdint>
#include <map>
#include <vector>

#include "engine/tensor.h"

namespace nce::eval {

// Best first: ranked_passages[q] lists passage indices for query q.
using Rankings = std::vector<std::vector<int64_t>>;
// relevant_passages[q]: the passages relevant to query q (order does not matter).
using RelevantSets = std::vector<std::vector<int64_t>>;

struct MetricsAtK {
    double accuracy = 0, precision = 0, recall = 0, mrr = 0, ndcg = 0, map = 0;
};

// One MetricsAtK per k in `ks`. Throws if the sizes disagree, a k is not positive, or a
// query has no relevant passage.
std::map<int64_t, MetricsAtK> retrieval_metrics(const Rankings& rankings, const RelevantSets& relevant,
                                                const std::vector<int64_t>& ks);

// The per-query values behind retrieval_metrics: per_query.at(k)[q] holds query q's metrics
// (accuracy and recall@k of one query, its reciprocal rank, its NDCG, ...), what a bootstrap
// over queries (eval/bootstrap.h) resamples. Same checks as retrieval_metrics.
std::map<int64_t, std::vector<MetricsAtK>> per_query_retrieval_metrics(const Rankings& rankings,
                                                                       const RelevantSets& relevant,
                                                                       const std::vector<int64_t>& ks);

// The mean over queries of per-query metrics, summed in query order: retrieval_metrics is
// exactly mean_metrics of per_query_retrieval_metrics, to the last bit. Throws when empty.
MetricsAtK mean_metrics(const std::vector<MetricsAtK>& per_query);

// The rows of an int64 [Q, k] tensor of passage indices (as a search returns) as Rankings.
Rankings rankings_from_tensor(const Tensor& indices);

// Rank@k: the share of queries whose target passage is among the first k of a ranking of the
// whole corpus. targets[q] is query q's single target. Equals accuracy@k with one relevant
// passage per query; kept as its own name because papers report it as Rank@k.
double rank_at_k(const Rankings& rankings, const std::vector<int64_t>& targets, int64_t k);

// Hard-negative accuracy: the share of queries whose positive is ranked above every hard
// negative of that query. A passage missing from the ranking counts as ranked below all that
// are in it; a positive missing from the ranking is a miss. rankings should cover the positive
// and the hard negatives (rank the whole corpus, or at least the candidates).
double hard_negative_accuracy(const Rankings& rankings, const std::vector<int64_t>& positives,
                              const RelevantSets& hard_negatives);

}  // namespace nce::eval
