// The two scorers `nce mine` ranks candidates with (retrieval/pairs/hard_negative_miner.h):
//
//   BM25    Okapi BM25 (eval/bm25.h) over the lexical tokens of eval/rankings.h
//           (whitespace words by default, as nce train's BM25 row), with nce train's k1 and b;
//           floor 0: a candidate that shares no token with the query is not ranked.
//   model   the cosine of a trained text_encoder's unit embeddings, exact (every candidate
//           scored: the positive's own score is needed for the margin, so an approximate
//           top-k would not do), read as nce train's evaluation reads them: the model's query
//           and passage prompts in front, a candidate longer than the window cut into
//           overlapping windows (retrieval/index/passage_index.h) and scoring as its best one.
//           The windows are embedded once; each block of queries is one [B, D]·[D, windows]
//           product. No floor.
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "retrieval/pairs/hard_negative_miner.h"
#include "eval/rankings.h"
#include "data/tokenizer.h"
#include "engine/tensor.h"
#include "eval/bm25.h"
#include "nn/model.h"

namespace nce::pairs {

class Bm25CandidateScorer : public CandidateScorer {
public:
    Bm25CandidateScorer(const std::vector<std::string>& candidates, eval::LexicalTokens tokens,
                        eval::Bm25Parameters parameters);
    std::string name() const override;
    std::vector<QueryScores> score(const std::vector<std::string>& anchors) const override;

private:
    std::vector<int64_t> token_ids(const std::string& text) const;  // tokens no candidate holds are left out

    eval::LexicalTokens tokens_;
    std::unordered_map<std::string, int64_t> vocabulary_;  // the candidates' tokens
    eval::Bm25Index index_;
};

class ModelCandidateScorer : public CandidateScorer {
public:
    // Embeds the candidates' windows of max_length tokens (prompt included; neighbours share
    // `overlap` tokens), `batch_size` at a time. Queries are cut at max_length tokens.
    ModelCandidateScorer(nn::EmbeddingModel& model, const data::Tokenizer& tokenizer,
                         const std::vector<std::string>& candidates, int64_t max_length, int64_t overlap,
                         int64_t batch_size);
    std::string name() const override { return "model"; }
    std::vector<QueryScores> score(const std::vector<std::string>& anchors) const override;
    // The candidates read in more than one window.
    int64_t windowed_candidates() const { return windowed_candidates_; }
    int64_t window_tokens() const { return window_tokens_; }

private:
    nn::EmbeddingModel& model_;
    const data::Tokenizer& tokenizer_;
    int64_t max_length_;
    int64_t batch_size_;
    int64_t candidate_count_ = 0;
    std::vector<int64_t> candidate_of_window_;
    Tensor window_embeddings_;  // [windows, D] float32, unit rows
    int64_t windowed_candidates_ = 0;
    int64_t window_tokens_ = 0;
};

}  // namespace nce::pairs
