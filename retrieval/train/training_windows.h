// Training on the window that holds the answer.
//
// The model reads at most max_passage_length tokens, so a longer passage is cut into
// overlapping windows (chunk_passages, the same windows evaluation and `index` use) and
// training pairs a query with one window of its relevant passage, not with the passage's
// first max_passage_length tokens:
//
//   - where the data says where the answer is (KorQuAD: answer_start), the positive is the
//     window that holds the whole answer, the one where it sits farthest from both edges
//     (a window overlap shows it twice); an answer cut by every window goes to the window
//     holding most of its bytes;
//   - elsewhere (StackExchange answers, code bodies) the positive is the window sharing the
//     most distinct words with the query (lower-cased whitespace words; the first on a tie).
//
//   passage of 300 tokens, window 128, overlap 32: [0,128) [96,224) [192,300)
//   answer at tokens 150-153                      ->        ^ the positive is window 2
//
// The result is a data set whose passages are the windows of the relevant passages (one per
// relevance) with the original queries and relevance scores, ready for make_batches.
#pragma once
#include <cstdint>

#include "data/dataset.h"
#include "data/tokenizer.h"

namespace nce::retrieval {

struct TrainingWindows {
    data::RetrievalDataset dataset;  // queries as given; passages = the chosen windows
    int64_t positives = 0;           // relevance pairs (hard negatives not counted)
    int64_t passages_split = 0;      // relevant passages longer than one window (negatives not counted)
    int64_t moved = 0;               // positives not in their passage's first window
    int64_t placed_by_answer = 0;    // of the split ones: placed by the answer's position
    int64_t placed_by_words = 0;     // ... by the words shared with the query
};

// Throws unless 0 <= overlap < window_tokens (chunk_passages' rule).
TrainingWindows training_windows(const data::RetrievalDataset& train, const data::Tokenizer& tokenizer,
                                 int64_t window_tokens, int64_t overlap);

}  // namespace nce::retrieval
