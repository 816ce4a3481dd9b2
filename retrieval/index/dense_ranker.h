// The model's side of a retrieval table: a split's queries ranked against its passages by
// one encoder, or by several side by side.
//
// Several encoders read as one: each text's vector is the concatenation of every encoder's
// unit vector over sqrt(count), a unit vector whose inner products are the mean of the
// encoders' (SPAR's lexical model (+) dense model). Each encoder reads the texts after its
// own prompts (its config's query_prompt / passage_prompt). With windows on (apps that read
// long passages in chunks), a passage is cut into overlapping windows, each window is
// encoded, and the passage scores as its best window.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "data/tokenizer.h"
#include "eval/rankings.h"
#include "nn/model.h"
#include "retrieval/index/passage_index.h"
#include "retrieval/settings/run_config.h"
#include "retrieval/model/text_model.h"

namespace nce::retrieval {

std::vector<std::string> query_texts_of(const data::RetrievalDataset& dataset);
std::vector<std::string> passage_texts_of(const data::RetrievalDataset& dataset);

// A split's window rankings -> passage rankings: the `depth` best passages, each as its best
// window, from at most 8 x depth windows. queries [Q, D], windows [W, D].
eval::RankedLists window_rankings(const Tensor& queries, const Tensor& windows, const std::vector<PassageChunk>& chunks,
                                  int64_t depth);

class DenseRanker {
public:
    // `windowed`: passages are read in windows of the config's max_passage_length with
    // `window_overlap` tokens shared between neighbours.
    DenseRanker(const RunConfig& config, const data::Tokenizer& tokenizer, bool windowed, int64_t window_overlap);

    // What a ranking read: queries and passages (windows) cut at the lengths, and how many
    // passages were read as more than one window.
    struct Counts {
        TruncationCount queries;
        TruncationCount passages;
        int64_t passages_in_windows = 0;
    };

    // `split`'s queries against its passages, the config's candidate_depth best of each.
    eval::RankedLists rank(nn::EmbeddingModel& encoder, const data::RetrievalDataset& split,
                           Counts* counts = nullptr) const;
    eval::RankedLists rank(const std::vector<nn::EmbeddingModel*>& encoders, const data::RetrievalDataset& split,
                           Counts* counts = nullptr) const;

private:
    using Prompt = std::string nn::ModelConfig::*;
    // [texts, sum of widths] / sqrt(count): the encoders' unit vectors side by side.
    Tensor encode(const std::vector<nn::EmbeddingModel*>& encoders, const std::vector<std::string>& texts,
                  Prompt prompt, int64_t max_length, TruncationCount* count) const;

    const RunConfig& config_;
    const data::Tokenizer& tokenizer_;
    bool windowed_;
    int64_t window_overlap_;
};

}  // namespace nce::retrieval
