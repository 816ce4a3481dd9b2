// nce code's app description: code retrieval, a function's signature and docstring -> its body.
//
// The corpus (retrieval/code/code_corpus.h) is the Python standard library of the python3 on PATH
// (or --data DIR, any folder of Python sources): every documented function outside the test
// suites, one query (signature + docstring) and one passage (body) each. The split keeps each
// file (or package, "app": {"split_by": "package"}) on one side, and each test signature is
// ranked against every body of the corpus (retrieval/code/whole_corpus_split.h). The table shows
// the untrained model, BM25 on whitespace tokens and on code identifiers (split at
// punctuation, '_' and camelCase), the trained model, and the hybrid, with Rank@1 and
// Rank@10. The run itself is retrieval/run/retrieval_app.h.
#pragma once
#include "retrieval/run/retrieval_app.h"

namespace nce::code {

// The text run's defaults: a small model, sized to the corpus.
retrieval::RunConfig code_defaults();

// The app: those defaults, the mined corpus as a data set, the whole-corpus split, the table.
retrieval::RetrievalApp code_app();

// `nce code features`' defaults: the sig_predictor reads features, not tokens.
retrieval::RunConfig features_defaults();

}  // namespace nce::code
