// Packing questions into batches so that no text appears twice in a batch.
//
// Two rows whose texts are equal but which are different items make a false negative: an
// in-batch loss would push a query away from a passage that is word for word its own answer.
// KorQuAD, for one, asks several questions about each paragraph, so the same passage text is
// the answer of several questions. The sampler keeps each batch free of that:
//   - no query text belongs to two questions of the batch, and
//   - no passage text is brought by two questions of the batch (answers and hard negatives).
//
// Example, batch_size 2, units in this order (query text / passage texts):
//   u0 "what is ale?" / P1     u1 "what is ale?" / P2     u2 "best hops?" / P1     u3 "why foam?" / P3
//   batch 0: u0, u3   (u1 repeats u0's query text, u2 repeats u0's passage: both wait)
//   batch 1: u1, u2   (the waiting units, in their order)
#pragma once
#include <cstdint>
#include <vector>

#include "data/dataset.h"

namespace nce::data {

// One question and what it brings into a batch. Its own texts must be distinct (the
// strategies drop an answer that repeats another answer's text before they get here).
struct BatchUnit {
    int64_t query = 0;              // index into dataset.queries
    std::vector<int64_t> passages;  // indices into dataset.passages: answers and hard negatives
    int64_t rows = 1;               // rows it takes in a batch (1 <= rows <= batch_size)
};

// Packs `units`, taken in the given order, into batches of at most batch_size rows; returns
// each batch as positions in `units`. With no_duplicates, a unit whose query text or one of
// whose passage texts is already in the batch being filled waits for a later batch, and the
// waiting units are the first tried for the next batch, in their order. Without it, units
// are packed in order. Every unit lands in exactly one batch.
std::vector<std::vector<size_t>> pack_units(const std::vector<BatchUnit>& units, const RetrievalDataset& dataset,
                                            int64_t batch_size, bool no_duplicates);

}  // namespace nce::data
