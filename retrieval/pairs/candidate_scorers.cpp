// BM25 and model scores of every candidate for a block of queries (candidate_scorers.h).
#include "retrieval/pairs/candidate_scorers.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "retrieval/index/passage_index.h"
#include "retrieval/model/text_model.h"
#include "engine/error.h"
#include "engine/tensor_math.h"
#include "engine/threads.h"

namespace nce::pairs {
namespace {

// The candidates' token ids, numbering each distinct token in order of first appearance.
std::vector<std::vector<int64_t>> candidate_token_ids(const std::vector<std::string>& candidates,
                                                      eval::LexicalTokens tokens,
                                                      std::unordered_map<std::string, int64_t>& vocabulary) {
    NCE_CHECK(!candidates.empty(), "mining: there is no candidate to rank");
    std::vector<std::vector<int64_t>> documents;
    documents.reserve(candidates.size());
    for (const std::string& text : candidates) {
        std::vector<int64_t> ids;
        eval::for_each_lexical_token(text, tokens, [&](const std::string& token) {
            ids.push_back(vocabulary.try_emplace(token, static_cast<int64_t>(vocabulary.size())).first->second);
        });
        documents.push_back(std::move(ids));
    }
    return documents;
}

}  // namespace

Bm25CandidateScorer::Bm25CandidateScorer(const std::vector<std::string>& candidates, eval::LexicalTokens tokens,
                                         eval::Bm25Parameters parameters)
    : tokens_(tokens), index_(candidate_token_ids(candidates, tokens, vocabulary_), parameters) {}

std::string Bm25CandidateScorer::name() const {
    return fmt::format("bm25 ({} tokens)", eval::lexical_tokens_name(tokens_));
}

std::vector<int64_t> Bm25CandidateScorer::token_ids(const std::string& text) const {
    std::vector<int64_t> ids;
    eval::for_each_lexical_token(text, tokens_, [&](const std::string& token) {
        auto found = vocabulary_.find(token);
        if (found != vocabulary_.end()) ids.push_back(found->second);
    });
    return ids;
}

std::vector<QueryScores> Bm25CandidateScorer::score(const std::vector<std::string>& anchors) const {
    std::vector<QueryScores> result(anchors.size());
    parallel_for(static_cast<int64_t>(anchors.size()), 4, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i)
            result[static_cast<size_t>(i)] = {index_.scores(token_ids(anchors[static_cast<size_t>(i)])), 0.0};
    });
    return result;
}

ModelCandidateScorer::ModelCandidateScorer(nn::EmbeddingModel& model, const data::Tokenizer& tokenizer,
                                           const std::vector<std::string>& candidates, int64_t max_length,
                                           int64_t overlap, int64_t batch_size)
    : model_(model),
      tokenizer_(tokenizer),
      max_length_(max_length),
      batch_size_(batch_size),
      candidate_count_(static_cast<int64_t>(candidates.size())) {
    const nn::ModelConfig& config = model_.config();
    std::vector<data::Passage> passages;
    passages.reserve(candidates.size());
    for (size_t c = 0; c < candidates.size(); ++c)
        passages.push_back({fmt::format("candidate {}", c + 1), candidates[c], ""});
    window_tokens_ = retrieval::passage_window(tokenizer_, config.passage_prompt, max_length_, overlap);
    std::vector<retrieval::PassageChunk> windows = retrieval::chunk_passages(passages, tokenizer_, window_tokens_, overlap);
    NCE_CHECK(!windows.empty(), "mine: no candidate gives a token with the model's tokenizer");
    std::vector<std::string> window_texts;
    std::vector<int64_t> windows_of_candidate(candidates.size(), 0);
    for (retrieval::PassageChunk& window : windows) {
        candidate_of_window_.push_back(window.passage);
        ++windows_of_candidate[static_cast<size_t>(window.passage)];
        window_texts.push_back(std::move(window.text));
    }
    for (int64_t count : windows_of_candidate) windowed_candidates_ += count > 1 ? 1 : 0;
    window_embeddings_ = retrieval::encode_texts(model_, tokenizer_,
                                                 retrieval::with_prompt(config.passage_prompt, std::move(window_texts)),
                                                 max_length_, batch_size_)
                             .to(Device::CPU);
}

std::vector<QueryScores> ModelCandidateScorer::score(const std::vector<std::string>& anchors) const {
    Tensor queries = retrieval::encode_texts(model_, tokenizer_, retrieval::with_prompt(model_.config().query_prompt, anchors),
                                             max_length_, batch_size_)
                         .to(Device::CPU);
    Tensor cosines = matmul(queries, window_embeddings_, Transpose::Second);  // [B, windows]
    std::vector<double> values = cosines.to_vector();
    const size_t windows = candidate_of_window_.size();
    std::vector<QueryScores> result(anchors.size());
    for (size_t i = 0; i < anchors.size(); ++i) {
        // A candidate scores as its best window; one with no token (no window) is never ranked.
        std::vector<double>& scores = result[i].scores;
        scores.assign(static_cast<size_t>(candidate_count_), -std::numeric_limits<double>::infinity());
        for (size_t w = 0; w < windows; ++w) {
            double& best = scores[static_cast<size_t>(candidate_of_window_[w])];
            best = std::max(best, values[i * windows + w]);
        }
    }
    return result;
}

}  // namespace nce::pairs
