#include "eval/hard_negative_mining.h"

#include <algorithm>
#include <unordered_set>

#include "engine/tensor_math.h"

namespace nce::eval {
namespace {

// How deep to search so that K non-positives fit: K plus the largest positive set, at most
// the corpus.
int64_t search_depth(const RelevantSets& positives, int64_t negatives_per_query, int64_t corpus_size) {
    std::size_t most_positives = 0;
    for (const auto& set : positives) most_positives = std::max(most_positives, set.size());
    return std::min(corpus_size, negatives_per_query + static_cast<int64_t>(most_positives));
}

void check_query_count(int64_t queries, const RelevantSets& positives, const char* function) {
    NCE_CHECK(static_cast<std::size_t>(queries) == positives.size(),
              "{}: {} queries but {} positive sets; give one set per query", function, queries, positives.size());
}

}  // namespace

Tensor hard_negatives_from_ranking(const Tensor& ranked_indices, const RelevantSets& positives,
                                   int64_t negatives_per_query) {
    check_rank(ranked_indices, 2, "hard_negatives_from_ranking", "ranked_indices");
    NCE_CHECK(ranked_indices.dtype() == Dtype::Int64, "hard_negatives_from_ranking: ranked_indices must be int64, got {}",
              dtype_name(ranked_indices.dtype()));
    NCE_CHECK(negatives_per_query > 0, "hard_negatives_from_ranking: negatives_per_query must be positive, got {}",
              negatives_per_query);
    int64_t query_count = ranked_indices.size(0), depth = ranked_indices.size(1);
    check_query_count(query_count, positives, "hard_negatives_from_ranking");
    Tensor host = ranked_indices.to(Device::CPU);
    const int64_t* ranked = host.data<int64_t>();
    Tensor mined = Tensor::empty({query_count, negatives_per_query}, Dtype::Int64);
    int64_t* out = mined.data<int64_t>();
    for (int64_t q = 0; q < query_count; ++q) {
        std::unordered_set<int64_t> positive(positives[q].begin(), positives[q].end());
        int64_t found = 0;
        for (int64_t i = 0; i < depth && found < negatives_per_query; ++i) {
            int64_t passage = ranked[q * depth + i];
            if (passage < 0 || positive.contains(passage)) continue;
            out[q * negatives_per_query + found++] = passage;
        }
        NCE_CHECK(found == negatives_per_query,
                  "hard_negatives_from_ranking: query {} has only {} non-positive passages among its {} ranked; "
                  "search deeper or ask for fewer than {} negatives",
                  q, found, depth, negatives_per_query);
    }
    return mined;
}

Tensor mine_hard_negatives(const Tensor& queries, const Tensor& corpus, const RelevantSets& positives,
                           int64_t negatives_per_query, const ExactSearchOptions& options) {
    check_rank(queries, 2, "mine_hard_negatives", "queries");
    check_rank(corpus, 2, "mine_hard_negatives", "corpus");
    check_query_count(queries.size(0), positives, "mine_hard_negatives");
    NCE_CHECK(negatives_per_query > 0, "mine_hard_negatives: negatives_per_query must be positive, got {}",
              negatives_per_query);
    int64_t depth = search_depth(positives, negatives_per_query, corpus.size(0));
    return hard_negatives_from_ranking(exact_search(queries, corpus, depth, options).indices, positives,
                                       negatives_per_query);
}

Tensor mine_hard_negatives(const FaissIndex& index, const Tensor& queries, const RelevantSets& positives,
                           int64_t negatives_per_query) {
    check_rank(queries, 2, "mine_hard_negatives", "queries");
    check_query_count(queries.size(0), positives, "mine_hard_negatives");
    NCE_CHECK(negatives_per_query > 0, "mine_hard_negatives: negatives_per_query must be positive, got {}",
              negatives_per_query);
    int64_t depth = search_depth(positives, negatives_per_query, index.size());
    return hard_negatives_from_ranking(index.search(queries, depth).indices, positives, negatives_per_query);
}

Tensor hard_negative_embeddings(const Tensor& passages, const Tensor& hard_negatives) {
    check_rank(passages, 2, "hard_negative_embeddings", "passages");
    check_rank(hard_negatives, 2, "hard_negative_embeddings", "hard_negatives");
    NCE_CHECK(hard_negatives.dtype() == Dtype::Int64, "hard_negative_embeddings: hard_negatives must be int64, got {}",
              dtype_name(hard_negatives.dtype()));
    Tensor flat = hard_negatives.reshape({hard_negatives.numel()});  // [Q·K], query by query
    for (int64_t passage : flat.to_indices())
        NCE_CHECK(0 <= passage && passage < passages.size(0),
                  "hard_negative_embeddings: passage index {} is outside the {} passages", passage, passages.size(0));
    return index_select(passages, flat);  // [Q·K, d]
}

}  // namespace nce::eval
