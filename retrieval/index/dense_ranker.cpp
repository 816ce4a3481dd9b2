#include "retrieval/index/dense_ranker.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "engine/error.h"

namespace nce::retrieval {
namespace {

// Chunk rankings -> passage rankings: a passage takes the score of its best chunk (its first
// appearance in the best-first chunk list); at most `depth` passages.
eval::RankedLists best_chunk_rankings(const eval::RankedLists& by_chunk, const std::vector<PassageChunk>& chunks,
                                      int64_t depth) {
    eval::RankedLists by_passage;
    by_passage.passages.resize(by_chunk.passages.size());
    by_passage.scores.resize(by_chunk.passages.size());
    for (size_t q = 0; q < by_chunk.passages.size(); ++q) {
        std::set<int64_t> seen;
        for (size_t r = 0; r < by_chunk.passages[q].size(); ++r) {
            int64_t passage = chunks[static_cast<size_t>(by_chunk.passages[q][r])].passage;
            if (!seen.insert(passage).second) continue;
            by_passage.passages[q].push_back(passage);
            by_passage.scores[q].push_back(by_chunk.scores[q][r]);
            if (static_cast<int64_t>(by_passage.passages[q].size()) == depth) break;
        }
    }
    return by_passage;
}

}  // namespace

std::vector<std::string> query_texts_of(const data::RetrievalDataset& dataset) {
    std::vector<std::string> texts;
    for (const data::Query& query : dataset.queries) texts.push_back(query.text);
    return texts;
}

std::vector<std::string> passage_texts_of(const data::RetrievalDataset& dataset) {
    std::vector<std::string> texts;
    for (const data::Passage& passage : dataset.passages) texts.push_back(passage.text);
    return texts;
}

eval::RankedLists window_rankings(const Tensor& queries, const Tensor& windows, const std::vector<PassageChunk>& chunks,
                                  int64_t depth) {
    const int64_t all = static_cast<int64_t>(chunks.size());
    return best_chunk_rankings(eval::dense_rankings(queries, windows, depth >= all / 8 ? all : 8 * depth), chunks,
                               depth);
}

DenseRanker::DenseRanker(const RunConfig& config, const data::Tokenizer& tokenizer, bool windowed,
                         int64_t window_overlap)
    : config_(config), tokenizer_(tokenizer), windowed_(windowed), window_overlap_(window_overlap) {}

Tensor DenseRanker::encode(const std::vector<nn::EmbeddingModel*>& encoders, const std::vector<std::string>& texts,
                           Prompt prompt, int64_t max_length, TruncationCount* count) const {
    std::vector<Tensor> parts;
    for (size_t e = 0; e < encoders.size(); ++e)
        parts.push_back(encode_texts(*encoders[e], tokenizer_, with_prompt(encoders[e]->config().*prompt, texts),
                                     max_length, config_.encode_batch_size, e == 0 ? count : nullptr));
    return parts.size() == 1 ? parts[0] : concat(parts, 1) * (1.0 / std::sqrt(static_cast<double>(parts.size())));
}

eval::RankedLists DenseRanker::rank(nn::EmbeddingModel& encoder, const data::RetrievalDataset& split,
                                    Counts* counts) const {
    return rank(std::vector<nn::EmbeddingModel*>{&encoder}, split, counts);
}

eval::RankedLists DenseRanker::rank(const std::vector<nn::EmbeddingModel*>& encoders,
                                    const data::RetrievalDataset& split, Counts* counts) const {
    Tensor q = encode(encoders, query_texts_of(split), &nn::ModelConfig::query_prompt, config_.max_query_length,
                      counts ? &counts->queries : nullptr);
    TruncationCount* passage_count = counts ? &counts->passages : nullptr;
    if (!windowed_) {
        Tensor p = encode(encoders, passage_texts_of(split), &nn::ModelConfig::passage_prompt,
                          config_.max_passage_length, passage_count);
        return eval::dense_rankings(q, p, config_.candidate_depth);
    }
    // Windows that leave room for the longest of the encoders' passage prompts.
    int64_t window = config_.max_passage_length;
    for (nn::EmbeddingModel* encoder : encoders)
        window = std::min(window, passage_window(tokenizer_, encoder->config().passage_prompt,
                                                 config_.max_passage_length, window_overlap_));
    std::vector<PassageChunk> chunks = chunk_passages(split.passages, tokenizer_, window, window_overlap_);
    NCE_CHECK(!chunks.empty(), "evaluation: no passage of the split gives a token");
    std::vector<std::string> chunk_texts;
    for (const PassageChunk& chunk : chunks) chunk_texts.push_back(chunk.text);
    if (counts) {
        std::map<int64_t, int64_t> chunks_of_passage;
        for (const PassageChunk& chunk : chunks) ++chunks_of_passage[chunk.passage];
        for (const auto& [passage, count] : chunks_of_passage) counts->passages_in_windows += count > 1 ? 1 : 0;
    }
    Tensor p = encode(encoders, chunk_texts, &nn::ModelConfig::passage_prompt, config_.max_passage_length,
                      passage_count);
    return window_rankings(q, p, chunks, config_.candidate_depth);
}

}  // namespace nce::retrieval
