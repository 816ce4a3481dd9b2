// Hard negatives for the training split, mined with BM25: each training question gets as
// extra negatives the passages of the training split that BM25 ranks highest for it and
// that do not answer it.
//
//   negatives(q) = the first K passages of bm25_ranking(q) over train.passages with
//                  score > 0 (sharing no word with the question is no harder than random),
//                  not a positive of q, and not equal in text to one
//
// They are written into the split as Relevance entries marked hard_negative, after the
// question's answers; training (retrieval/train/training.h) then adds them to every batch holding
// the question, and training_windows gives each its window closest to the question. Only
// the training split is read: validation and test never see the mining.
#pragma once
#include <cstdint>

#include "data/dataset.h"
#include "eval/rankings.h"

namespace nce::retrieval {

struct MinedNegatives {
    int64_t questions = 0;       // training questions
    int64_t negatives = 0;       // hard negatives added
    int64_t short_rankings = 0;  // questions that got fewer than K (too few passages share a word)
};

// Adds up to `per_question` BM25 negatives to every question of `train` (none for 0).
MinedNegatives add_bm25_negatives(data::RetrievalDataset& train, int64_t per_question, eval::LexicalTokens tokens,
                                  eval::Bm25Parameters parameters);

}  // namespace nce::retrieval
