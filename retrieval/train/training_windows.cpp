// Choosing each training query's window (see training_windows.h).
#include "retrieval/train/training_windows.h"

#include <algorithm>
#include <map>
#include <set>

#include "retrieval/index/passage_index.h"
#include "eval/rankings.h"

namespace nce::retrieval {
namespace {

// The window for an answer at bytes [begin, end): among windows holding all of it, the one
// where it sits farthest from the nearer edge; else the one holding most of its bytes.
size_t window_of_answer(const std::vector<const PassageChunk*>& windows, int64_t begin, int64_t end) {
    size_t best = 0;
    int64_t best_margin = -1, best_overlap = -1;
    bool best_holds = false;
    for (size_t w = 0; w < windows.size(); ++w) {
        const PassageChunk& window = *windows[w];
        bool holds = window.begin <= begin && end <= window.end;
        int64_t overlap = std::min(end, window.end) - std::max(begin, window.begin);
        int64_t margin = std::min(begin - window.begin, window.end - end);
        if (holds && (!best_holds || margin > best_margin)) {
            best = w, best_holds = true, best_margin = margin;
        } else if (!best_holds && overlap > best_overlap) {
            best = w, best_overlap = overlap;
        }
    }
    return best;
}

// The window sharing the most distinct whitespace words with the query (first on a tie).
size_t window_of_words(const std::vector<const PassageChunk*>& windows, const std::string& query) {
    std::vector<std::string> query_words = eval::lexical_tokens(query, eval::LexicalTokens::Whitespace);
    std::set<std::string> wanted(query_words.begin(), query_words.end());
    size_t best = 0;
    int64_t best_shared = -1;
    for (size_t w = 0; w < windows.size(); ++w) {
        std::vector<std::string> words = eval::lexical_tokens(windows[w]->text, eval::LexicalTokens::Whitespace);
        std::set<std::string> distinct(words.begin(), words.end());
        int64_t shared = std::count_if(distinct.begin(), distinct.end(),
                                       [&wanted](const std::string& word) { return wanted.count(word) > 0; });
        if (shared > best_shared) best = w, best_shared = shared;
    }
    return best;
}

}  // namespace

TrainingWindows training_windows(const data::RetrievalDataset& train, const data::Tokenizer& tokenizer,
                                 int64_t window_tokens, int64_t overlap) {
    std::vector<PassageChunk> chunks = chunk_passages(train.passages, tokenizer, window_tokens, overlap);
    std::map<int64_t, std::vector<const PassageChunk*>> windows_of_passage;  // in passage order
    for (const PassageChunk& chunk : chunks) windows_of_passage[chunk.passage].push_back(&chunk);

    TrainingWindows result;
    result.dataset.name = train.name;
    result.dataset.queries = train.queries;
    result.dataset.report = train.report;
    std::set<int64_t> split_passages;
    std::map<const PassageChunk*, int64_t> passage_of_window;
    for (const data::Relevance& relevance : train.relevance) {
        auto found = windows_of_passage.find(relevance.passage);
        if (found == windows_of_passage.end()) continue;  // a passage with no token: nothing to read
        const std::vector<const PassageChunk*>& windows = found->second;
        size_t chosen = 0;
        const bool counted = !relevance.hard_negative;  // a negative takes its closest window too, uncounted
        if (windows.size() > 1) {
            if (counted) split_passages.insert(relevance.passage);
            if (relevance.answer_begin >= 0) {
                chosen = window_of_answer(windows, relevance.answer_begin, relevance.answer_end);
                result.placed_by_answer += counted;
            } else {
                chosen = window_of_words(windows, train.queries[static_cast<size_t>(relevance.query)].text);
                result.placed_by_words += counted;
            }
        }
        const PassageChunk& window = *windows[chosen];
        data::Relevance pair = relevance;
        pair.answer_begin = relevance.answer_begin >= 0 ? std::max<int64_t>(0, relevance.answer_begin - window.begin) : -1;
        pair.answer_end = relevance.answer_end >= 0 ? std::min(window.end, relevance.answer_end) - window.begin : -1;
        // One passage per chosen window, however many queries it answers.
        auto [slot, is_new] = passage_of_window.try_emplace(&window, static_cast<int64_t>(result.dataset.passages.size()));
        if (is_new) {
            const data::Passage& passage = train.passages[static_cast<size_t>(relevance.passage)];
            result.dataset.passages.push_back({passage.id + "@" + std::to_string(window.begin), window.text, passage.group});
        }
        pair.passage = slot->second;
        result.dataset.relevance.push_back(pair);
        if (!counted) continue;
        ++result.positives;
        if (chosen > 0) ++result.moved;
    }
    result.passages_split = static_cast<int64_t>(split_passages.size());
    return result;
}

}  // namespace nce::retrieval
