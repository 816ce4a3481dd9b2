// What a retrieval run reports once it has measured: the table on the terminal, results.json,
// metrics.svg, training_curves.svg and the model card (README.md), and the facts results.json
// carries about the split, the tokenizer, the prompts, pretraining and the term share.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>

#include "data/split.h"
#include "data/tokenizer.h"
#include "nn/model.h"
#include "retrieval/train/pretraining.h"
#include "retrieval/run/retrieval_app.h"
#include "retrieval/train/term_share.h"

namespace nce::retrieval {

// Writes results.json, metrics.svg and (after training) training_curves.svg and README.md;
// prints the table, the tests against BM25, the hybrid's weight and what was truncated.
void report(const RetrievalApp& app, const RunConfig& config, const RunFiles& files, const RunOutcome& outcome,
            const nlohmann::json& facts, bool trained);

// "N of M <what> were longer than L tokens and were truncated", when any were.
void print_truncation(const char* what, const TruncationCount& count, int64_t max_length);

// The split sizes for results.json.
nlohmann::json split_sizes(const data::DatasetSplits& splits);

// The facts of results.json every run starts with: the split's sizes and the tokenizer's.
nlohmann::json split_and_tokenizer_facts(const data::DatasetSplits& splits, const data::Tokenizer& tokenizer);

// The prompts a model reads with.
nlohmann::json prompts_fact(const nn::EmbeddingModel& model);

nlohmann::json pretraining_facts(const PretrainingReport& report);

nlohmann::json term_share_fact(const TermShareChoice& choice);

}  // namespace nce::retrieval
