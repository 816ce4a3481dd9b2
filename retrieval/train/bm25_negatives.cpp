#include "retrieval/train/bm25_negatives.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace nce::retrieval {

MinedNegatives add_bm25_negatives(data::RetrievalDataset& train, int64_t per_question, eval::LexicalTokens tokens,
                                  eval::Bm25Parameters parameters) {
    MinedNegatives mined;
    mined.questions = static_cast<int64_t>(train.queries.size());
    if (per_question <= 0) return mined;

    // positives[q]: the passages answering q, and the texts of those passages
    std::vector<std::set<int64_t>> positives(train.queries.size());
    std::vector<std::set<std::string>> positive_texts(train.queries.size());
    for (const data::Relevance& entry : train.relevance) {
        if (entry.hard_negative) continue;
        positives[static_cast<size_t>(entry.query)].insert(entry.passage);
        positive_texts[static_cast<size_t>(entry.query)].insert(train.passages[static_cast<size_t>(entry.passage)].text);
    }

    std::vector<std::string> questions, passages;
    for (const data::Query& query : train.queries) questions.push_back(query.text);
    for (const data::Passage& passage : train.passages) passages.push_back(passage.text);
    // Deep enough for K after the skipped passages: the positives and every passage sharing a
    // positive's text.
    std::map<std::string, int64_t> passages_with_text;
    for (const std::string& text : passages) ++passages_with_text[text];
    int64_t most_skipped = 0;
    for (const auto& texts : positive_texts) {
        int64_t skipped = 0;
        for (const std::string& text : texts) skipped += passages_with_text[text];
        most_skipped = std::max(most_skipped, skipped);
    }
    const int64_t depth = per_question + most_skipped;
    eval::RankedLists ranked = eval::bm25_rankings(questions, passages, tokens, parameters, depth);

    for (size_t q = 0; q < questions.size(); ++q) {
        int64_t added = 0;
        for (size_t r = 0; r < ranked.passages[q].size() && added < per_question; ++r) {
            const int64_t passage = ranked.passages[q][r];
            if (ranked.scores[q][r] <= 0) break;  // ranked best first: the rest share no word either
            if (positives[q].count(passage) != 0) continue;
            if (positive_texts[q].count(train.passages[static_cast<size_t>(passage)].text) != 0) continue;
            data::Relevance negative;
            negative.query = static_cast<int64_t>(q);
            negative.passage = passage;
            negative.score = 0;
            negative.rank = static_cast<int64_t>(positives[q].size()) + added;  // after the answers
            negative.hard_negative = true;
            train.relevance.push_back(negative);
            ++added;
        }
        mined.negatives += added;
        if (added < per_question) ++mined.short_rankings;
    }
    return mined;
}

}  // namespace nce::retrieval
