// Settings sized to the data. The retrieval apps leave the vocabulary and the two lengths
// at -1 by default, and a run sizes them to the texts it is given, so that the same command
// fits a small generated site and a real dump without flags the user would have to know:
//
//   vocab_size          6 x the square root of the number of words (split at whitespace) in
//                       the training texts (queries and passages), rounded to 100, within
//                       [kSmallestVocabulary, kLargestVocabulary]: distinct words grow about as
//                       the square root of a text (Heaps' law), and a vocabulary that grows the
//                       same way keeps each piece seen often enough to learn; sub-word pieces
//                       also let inflected words (Korean particles) meet. (`nce train` sizes
//                       its vocabulary by the same law, 4 x the root, apps/train_command.cpp.)
//                       SentencePiece then takes no more pieces than the text fills.
//   max_query_length    the 95th percentile of the training queries' token counts (the query
//                       prompt's included), rounded up to a multiple of 8, within [16, 256]:
//                       a query is read at once, not in windows, so the cap is higher than the
//                       passages' (at 128, 46 of beer's 129 test questions were cut)
//   max_passage_length  the 90th percentile of the training passages' token counts (the
//                       passage prompt's included), rounded up to a multiple of 8, within
//                       [32, 128]: an app that reads passages in windows (chunked_passages)
//                       reads the longer ones whole, window by window
//
// A value the user gives (flag or --config) is kept. The sized values go into the run's
// config.json, which eval and index read, so they see the sizes train used.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "retrieval/settings/run_config.h"
#include "data/tokenizer.h"

namespace nce::retrieval {

inline constexpr int64_t kSmallestVocabulary = 400;
inline constexpr int64_t kLargestVocabulary = 8000;

// The vocabulary for tokenizer texts, by the rule above.
int64_t vocabulary_for(const std::vector<std::string>& texts);

// The value at `fraction` (0.9: the 90th percentile) of `counts` (not empty), rounded up to a
// multiple of 8 and then put into [low, high].
int64_t length_for(std::vector<int64_t> counts, double fraction, int64_t low, int64_t high);

// Fills config.vocab_size when it is kSizedToData; says what it chose.
void size_vocabulary(RunConfig& config, const std::vector<std::string>& tokenizer_texts);

// Fills config.max_query_length and max_passage_length where they are kSizedToData, from the
// texts as the model reads them (after their prompts); says what it chose.
void size_lengths(RunConfig& config, const data::Tokenizer& tokenizer, const std::vector<std::string>& queries,
                  const std::vector<std::string>& passages);

}  // namespace nce::retrieval
