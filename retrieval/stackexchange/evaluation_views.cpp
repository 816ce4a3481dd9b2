#include "retrieval/stackexchange/evaluation_views.h"

#include <algorithm>
#include <numeric>
#include <unordered_map>

#include "engine/error.h"
#include "engine/tensor_math.h"
#include "eval/bm25.h"

namespace nce::stackexchange {

ScoreMatrix dense_score_matrix(const Tensor& query_embeddings, const Tensor& passage_embeddings) {
    NCE_CHECK(query_embeddings.rank() == 2 && passage_embeddings.rank() == 2 &&
                  query_embeddings.shape()[1] == passage_embeddings.shape()[1],
              "stackexchange: query embeddings {} and passage embeddings {} must be [Q, D] and [N, D]",
              shape_string(query_embeddings.shape()), shape_string(passage_embeddings.shape()));
    const int64_t query_count = query_embeddings.shape()[0], passage_count = passage_embeddings.shape()[0];
    std::vector<double> flat = matmul(query_embeddings, passage_embeddings, Transpose::Second).to_vector();  // [Q, N]
    ScoreMatrix scores(static_cast<size_t>(query_count));
    for (int64_t q = 0; q < query_count; ++q)
        scores[static_cast<size_t>(q)].assign(flat.begin() + q * passage_count, flat.begin() + (q + 1) * passage_count);
    return scores;
}

ScoreMatrix bm25_score_matrix(const std::vector<std::string>& queries, const std::vector<std::string>& passages,
                              eval::LexicalTokens tokens, const eval::Bm25Parameters& parameters) {
    NCE_CHECK(!passages.empty(), "stackexchange: BM25 needs at least one passage; the split has none");
    // Words -> ids, so that eval/bm25.h (which indexes ids) can score them.
    std::unordered_map<std::string, int64_t> word_ids;
    auto to_ids = [&](const std::string& text, bool add) {
        std::vector<int64_t> ids;
        eval::for_each_lexical_token(text, tokens, [&](const std::string& word) {
            auto found = word_ids.find(word);
            if (found != word_ids.end()) ids.push_back(found->second);
            else if (add) ids.push_back(word_ids.emplace(word, static_cast<int64_t>(word_ids.size())).first->second);
            // a query word found in no passage adds nothing to any score: dropped
        });
        return ids;
    };
    std::vector<std::vector<int64_t>> documents;
    for (const std::string& passage : passages) documents.push_back(to_ids(passage, true));
    eval::Bm25Index index(documents, parameters);
    ScoreMatrix scores;
    for (const std::string& query : queries) scores.push_back(index.scores(to_ids(query, false)));
    return scores;
}

const std::vector<View>& all_views() {
    static const std::vector<View> views = {View::Overall, View::InBatch, View::HardNegative};
    return views;
}

const char* view_name(View view) {
    switch (view) {
        case View::Overall: return "overall";
        case View::InBatch: return "in-batch";
        case View::HardNegative: return "hard-negative";
    }
    return "?";
}

EvaluationViews make_evaluation_views(const data::RetrievalDataset& test, const ScoreMatrix& lexical_scores,
                                      const ViewOptions& options) {
    NCE_CHECK(options.batch_questions >= 1, "stackexchange: in_batch_questions must be at least 1, got {}",
              options.batch_questions);
    NCE_CHECK(options.hard_negatives >= 1, "stackexchange: hard_negatives must be at least 1, got {}",
              options.hard_negatives);
    const int64_t query_count = static_cast<int64_t>(test.queries.size());
    EvaluationViews views;
    views.passages = static_cast<int64_t>(test.passages.size());
    NCE_CHECK(static_cast<int64_t>(lexical_scores.size()) == query_count,
              "stackexchange: BM25 scores cover {} queries, the test split has {}", lexical_scores.size(), query_count);
    views.relevant.assign(static_cast<size_t>(query_count), {});
    for (const data::Relevance& relevance : test.relevance)
        views.relevant[static_cast<size_t>(relevance.query)].push_back(relevance.passage);
    for (int64_t q = 0; q < query_count; ++q) {
        auto& answers = views.relevant[static_cast<size_t>(q)];
        NCE_CHECK(!answers.empty(), "stackexchange: test question {} has no answer; every question needs one",
                  test.queries[static_cast<size_t>(q)].id);
        std::sort(answers.begin(), answers.end());
    }

    // In-batch: the answers of the questions in the same block of batch_questions.
    views.in_batch_candidates.resize(static_cast<size_t>(query_count));
    for (int64_t start = 0; start < query_count; start += options.batch_questions) {
        int64_t end = std::min(query_count, start + options.batch_questions);
        std::vector<int64_t> candidates;
        for (int64_t q = start; q < end; ++q)
            for (int64_t passage : views.relevant[static_cast<size_t>(q)]) candidates.push_back(passage);
        std::sort(candidates.begin(), candidates.end());
        candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
        for (int64_t q = start; q < end; ++q) views.in_batch_candidates[static_cast<size_t>(q)] = candidates;
    }

    // Hard-negative: own answers plus BM25's highest-scored strangers.
    views.hard_negative_candidates.resize(static_cast<size_t>(query_count));
    for (int64_t q = 0; q < query_count; ++q) {
        const auto& answers = views.relevant[static_cast<size_t>(q)];
        const auto& scores = lexical_scores[static_cast<size_t>(q)];
        std::vector<int64_t> strangers;
        for (int64_t p = 0; p < views.passages; ++p)
            if (!std::binary_search(answers.begin(), answers.end(), p)) strangers.push_back(p);
        int64_t take = std::min<int64_t>(options.hard_negatives, static_cast<int64_t>(strangers.size()));
        std::partial_sort(strangers.begin(), strangers.begin() + take, strangers.end(), [&](int64_t a, int64_t b) {
            double sa = scores[static_cast<size_t>(a)], sb = scores[static_cast<size_t>(b)];
            return sa != sb ? sa > sb : a < b;
        });
        std::vector<int64_t> candidates = answers;
        candidates.insert(candidates.end(), strangers.begin(), strangers.begin() + take);
        std::sort(candidates.begin(), candidates.end());
        views.hard_negative_candidates[static_cast<size_t>(q)] = candidates;
    }
    return views;
}

eval::RankedLists rank_in_view(const ScoreMatrix& scores, const EvaluationViews& views, View view) {
    NCE_CHECK(scores.size() == views.relevant.size(), "stackexchange: scores cover {} queries, the views {}",
              scores.size(), views.relevant.size());
    eval::RankedLists lists;
    std::vector<int64_t> everything(static_cast<size_t>(views.passages));
    std::iota(everything.begin(), everything.end(), 0);
    for (size_t q = 0; q < scores.size(); ++q) {
        NCE_CHECK(static_cast<int64_t>(scores[q].size()) == views.passages,
                  "stackexchange: query {} has scores for {} passages, the split has {}", q, scores[q].size(),
                  views.passages);
        std::vector<int64_t> candidates = view == View::Overall   ? everything
                                          : view == View::InBatch ? views.in_batch_candidates[q]
                                                                  : views.hard_negative_candidates[q];
        std::stable_sort(candidates.begin(), candidates.end(), [&](int64_t a, int64_t b) {
            double sa = scores[q][static_cast<size_t>(a)], sb = scores[q][static_cast<size_t>(b)];
            return sa != sb ? sa > sb : a < b;
        });
        std::vector<double> ranked_scores;
        for (int64_t passage : candidates) ranked_scores.push_back(scores[q][static_cast<size_t>(passage)]);
        lists.passages.push_back(std::move(candidates));
        lists.scores.push_back(std::move(ranked_scores));
    }
    return lists;
}

const std::vector<std::string>& view_columns() {
    static const std::vector<std::string> columns = {"mrr@10", "accuracy@1", "ndcg@10"};
    return columns;
}

retrieval::MetricRow score_view(const std::string& name, const eval::RankedLists& rankings,
                                const EvaluationViews& views, const eval::BootstrapOptions& bootstrap) {
    return retrieval::score_rankings(name, rankings, views.relevant, view_columns(), bootstrap);
}

}  // namespace nce::stackexchange
