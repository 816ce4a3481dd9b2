// nce korquad's app description: question -> paragraph retrieval on KorQuAD 1.0.
//
// With no --data the app generates a KorQuAD-format file of Korean towns
// (retrieval/korquad/korquad_generator.h) into the output folder and reads it back through the
// same reader as the real file; `--data KorQuAD_v1.0_dev.json` runs on the real data. Questions
// are the queries, paragraphs the passages; the split keeps each article on one side. The table
// shows the untrained model, BM25 on whitespace tokens and on whitespace tokens plus character
// bigrams inside words (Korean particles stick to words, so bigrams find a word under another
// particle), the trained model, and the hybrid of the better BM25 and the model. The run
// itself is retrieval/run/retrieval_app.h.
#pragma once
#include "retrieval/run/retrieval_app.h"

namespace nce::korquad {

// The app: its defaults from scratch and from a pretrained model, its data set and its table.
retrieval::RetrievalApp korquad_app();

}  // namespace nce::korquad
