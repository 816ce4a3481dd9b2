#include "retrieval/code/whole_corpus_split.h"

#include <map>
#include <string>

#include "engine/error.h"

namespace nce::code {

data::DatasetSplits split_with_whole_corpus_test(const data::RetrievalDataset& dataset, double validation_fraction,
                                                 double test_fraction, uint64_t seed) {
    data::DatasetSplits splits = data::split_by_group(dataset, validation_fraction, test_fraction, seed);
    // Each original query's relevance, found again through its id (ids are unique: file:line:name).
    std::map<std::string, int64_t> query_index;
    for (size_t q = 0; q < dataset.queries.size(); ++q) {
        bool inserted = query_index.emplace(dataset.queries[q].id, static_cast<int64_t>(q)).second;
        NCE_CHECK(inserted, "data set {}: query id '{}' appears twice; the code corpus needs unique ids", dataset.name,
                  dataset.queries[q].id);
    }
    std::multimap<int64_t, const data::Relevance*> relevance_of;
    for (const data::Relevance& relevance : dataset.relevance) relevance_of.emplace(relevance.query, &relevance);

    data::RetrievalDataset test;
    test.name = splits.test.name;
    test.queries = splits.test.queries;
    test.passages = dataset.passages;
    for (size_t q = 0; q < test.queries.size(); ++q) {
        int64_t original = query_index.at(test.queries[q].id);
        auto [first, last] = relevance_of.equal_range(original);
        for (auto it = first; it != last; ++it) {
            data::Relevance relevance = *it->second;
            relevance.query = static_cast<int64_t>(q);
            test.relevance.push_back(relevance);
        }
    }
    splits.test = std::move(test);
    return splits;
}

}  // namespace nce::code
