// The split of `nce code`: by group (file or package) as data::split_by_group splits, except
// that the test queries are ranked against every body of the corpus, not only the test
// side's. That is the task the issue measures ("signature and docstring -> body over all the
// bodies"): a test signature must find its body among thousands, most of them from files the
// model trained on (they are distractors there; no test body is ever trained on).
//
// Train and validation are split_by_group's; test keeps its queries and gets every passage of
// the data set, with each query's relevance pointing at its own passage there.
#pragma once
#include <cstdint>

#include "data/split.h"

namespace nce::code {

data::DatasetSplits split_with_whole_corpus_test(const data::RetrievalDataset& dataset, double validation_fraction,
                                                 double test_fraction, uint64_t seed);

}  // namespace nce::code
