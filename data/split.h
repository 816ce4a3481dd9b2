// Splitting a data set into train, validation and test by group, so that no group (an
// article, a question thread, a source file) has queries on two sides: a model is then
// evaluated on groups it never saw in training.
//
// The distinct groups, in order of first appearance, are shuffled with nce::Generator(seed)
// and dealt out in that order: test takes groups until it holds at least
// round(test_fraction * queries) queries, validation the same with its fraction, train the
// rest. The same data set and seed give the same split on every machine.
//
// Each side keeps its queries in their original order, the passages relevant to them (a
// passage relevant to queries on two sides is copied to both), and the relevance re-indexed
// into its own queries and passages. A passage relevant to no query stays with the side its
// group went to (train when its group has no queries).
#pragma once
#include <cstdint>

#include "data/dataset.h"

namespace nce::data {

struct DatasetSplits {
    RetrievalDataset train;
    RetrievalDataset validation;
    RetrievalDataset test;
};

// Fractions are of queries, each in [0, 1) with validation_fraction + test_fraction < 1.
DatasetSplits split_by_group(const RetrievalDataset& dataset, double validation_fraction, double test_fraction,
                             uint64_t seed);

}  // namespace nce::data
