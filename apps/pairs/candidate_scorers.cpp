// BM25 and model scores of every candidate for a block of queries (candidate_scorers.h).
#include "apps/pairs/candidate_scorers.h"

#include <fmt/format.h>

#include "apps/retrieval/text_model.h"
#include "engine/error.h"
#include "engine/tensor_math.h"
#include "engine/threads.h"

namespace nce::apps::pairs {
namespace {

// The candidates' token ids, numbering each distinct token in order of first appearance.
std::vector<std::vector<int64_t>> candidate_token_ids(const std::vector<std::string>& candidates,
                                                      retrieval::LexicalTokens tokens,
                                                      std::unordered_map<std::string, int64_t>& vocabulary) {
    NCE_CHECK(!candidates.empty(), "mining: there is no candidate to rank");
    std::vector<std::vector<int64_t>> documents;
    documents.reserve(candidates.size());
    for (const std::string& text : candidates) {
        std::vector<int64_t> ids;
        for (const std::string& token : retrieval::lexical_tokens(text, tokens))
            ids.push_back(vocabulary.try_emplace(token, static_cast<int64_t>(vocabulary.size())).first->second);
        documents.push_back(std::move(ids));
    }
    return documents;
}

}  // namespace

Bm25CandidateScorer::Bm25CandidateScorer(const std::vector<std::string>& candidates, retrieval::LexicalTokens tokens,
                                         eval::Bm25Parameters parameters)
    : tokens_(tokens), index_(candidate_token_ids(candidates, tokens, vocabulary_), parameters) {}

std::string Bm25CandidateScorer::name() const {
    return fmt::format("bm25 ({} tokens)", retrieval::lexical_tokens_name(tokens_));
}

std::vector<int64_t> Bm25CandidateScorer::token_ids(const std::string& text) const {
    std::vector<int64_t> ids;
    for (const std::string& token : retrieval::lexical_tokens(text, tokens_)) {
        auto found = vocabulary_.find(token);
        if (found != vocabulary_.end()) ids.push_back(found->second);
    }
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
                                           int64_t batch_size)
    : model_(model), tokenizer_(tokenizer), max_length_(max_length), batch_size_(batch_size) {
    retrieval::TruncationCount count;
    candidate_embeddings_ =
        retrieval::encode_texts(model_, tokenizer_, candidates, max_length_, batch_size_, &count).to(Device::CPU);
    truncated_candidates_ = count.truncated;
}

std::vector<QueryScores> ModelCandidateScorer::score(const std::vector<std::string>& anchors) const {
    Tensor queries = retrieval::encode_texts(model_, tokenizer_, anchors, max_length_, batch_size_).to(Device::CPU);
    Tensor cosines = matmul(queries, candidate_embeddings_, Transpose::Second);  // [B, N]
    std::vector<double> values = cosines.to_vector();
    const auto candidates = static_cast<size_t>(candidate_embeddings_.size(0));
    std::vector<QueryScores> result(anchors.size());
    for (size_t i = 0; i < anchors.size(); ++i)
        result[i].scores.assign(values.begin() + static_cast<std::ptrdiff_t>(i * candidates),
                                values.begin() + static_cast<std::ptrdiff_t>((i + 1) * candidates));
    return result;
}

}  // namespace nce::apps::pairs
