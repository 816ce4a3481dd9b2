// nce stackexchange's app description: question -> answer retrieval on a StackExchange dump
// (every answer of a question is relevant to it). With no --data it runs on a generated
// brewing site in the dump's format (retrieval/stackexchange/generated_site.h). train, eval,
// index and search are the shared retrieval app (retrieval/run/retrieval_app.h); compare trains
// one model per loss and scores them in three views (retrieval/stackexchange/loss_comparison.h).
#pragma once
#include <cstdint>

#include "retrieval/run/retrieval_app.h"

namespace nce::stackexchange {

// The app: defaults, the dump (or the generated site) as a data set, the table's BM25.
retrieval::RetrievalApp stackexchange_app();

// `compare`'s steps per loss.
inline constexpr int64_t kCompareSteps = 400;

}  // namespace nce::stackexchange
