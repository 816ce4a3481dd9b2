#include "data/split.h"

#include <array>
#include <cmath>
#include <numeric>
#include <unordered_map>
#include <vector>

#include "engine/error.h"
#include "engine/random.h"

namespace nce::data {
namespace {

enum Side : size_t { kTrain = 0, kValidation = 1, kTest = 2 };
constexpr std::array<const char*, 3> kSideNames{"train", "validation", "test"};

void check_fraction(double fraction, const char* name) {
    NCE_CHECK(std::isfinite(fraction) && fraction >= 0 && fraction < 1,
              "split_by_group: {} must be in [0, 1) (a share of the queries), got {}", name, fraction);
}

void check_relevance_indices(const RetrievalDataset& dataset) {
    for (size_t i = 0; i < dataset.relevance.size(); ++i) {
        const Relevance& relevance = dataset.relevance[i];
        NCE_CHECK(relevance.query >= 0 && relevance.query < static_cast<int64_t>(dataset.queries.size()) &&
                      relevance.passage >= 0 && relevance.passage < static_cast<int64_t>(dataset.passages.size()),
                  "split_by_group: relevance {} of data set '{}' names query {} and passage {}, but there are {} "
                  "queries and {} passages",
                  i, dataset.name, relevance.query, relevance.passage, dataset.queries.size(), dataset.passages.size());
    }
}

// Builds one side from the queries and passages assigned to it, re-indexing the relevance.
RetrievalDataset build_side(const RetrievalDataset& dataset, Side side, const std::vector<Side>& side_of_query,
                            const std::vector<std::array<bool, 3>>& passage_on_side) {
    RetrievalDataset out;
    out.name = dataset.name + "/" + kSideNames[side];
    std::vector<int64_t> new_query_index(dataset.queries.size(), -1);
    std::vector<int64_t> new_passage_index(dataset.passages.size(), -1);
    for (size_t query = 0; query < dataset.queries.size(); ++query) {
        if (side_of_query[query] != side) continue;
        new_query_index[query] = static_cast<int64_t>(out.queries.size());
        out.queries.push_back(dataset.queries[query]);
    }
    for (size_t passage = 0; passage < dataset.passages.size(); ++passage) {
        if (!passage_on_side[passage][side]) continue;
        new_passage_index[passage] = static_cast<int64_t>(out.passages.size());
        out.passages.push_back(dataset.passages[passage]);
    }
    for (const Relevance& relevance : dataset.relevance) {
        if (side_of_query[static_cast<size_t>(relevance.query)] != side) continue;
        Relevance moved = relevance;
        moved.query = new_query_index[static_cast<size_t>(relevance.query)];
        moved.passage = new_passage_index[static_cast<size_t>(relevance.passage)];
        out.relevance.push_back(moved);
    }
    out.report.records = {{"queries", static_cast<int64_t>(out.queries.size())},
                          {"passages", static_cast<int64_t>(out.passages.size())},
                          {"relevance", static_cast<int64_t>(out.relevance.size())}};
    return out;
}

}  // namespace

DatasetSplits split_by_group(const RetrievalDataset& dataset, double validation_fraction, double test_fraction,
                             uint64_t seed) {
    check_fraction(validation_fraction, "validation_fraction");
    check_fraction(test_fraction, "test_fraction");
    NCE_CHECK(validation_fraction + test_fraction < 1,
              "split_by_group: validation_fraction + test_fraction must be below 1 so that training keeps some "
              "queries, got {} + {}",
              validation_fraction, test_fraction);
    check_relevance_indices(dataset);

    // 1. The groups of the queries, in order of first appearance, and how many queries each has.
    std::unordered_map<std::string, size_t> group_index;
    std::vector<int64_t> queries_in_group;
    std::vector<size_t> group_of_query(dataset.queries.size());
    for (size_t query = 0; query < dataset.queries.size(); ++query) {
        auto [found, is_new] = group_index.try_emplace(dataset.queries[query].group, queries_in_group.size());
        if (is_new) queries_in_group.push_back(0);
        group_of_query[query] = found->second;
        ++queries_in_group[found->second];
    }

    // 2. Shuffle the groups (Fisher-Yates with the seeded generator) and deal them out:
    //    test first, then validation, each until it reaches its share of the queries.
    std::vector<size_t> order(queries_in_group.size());
    std::iota(order.begin(), order.end(), size_t{0});
    Generator generator(seed);
    for (size_t remaining = order.size(); remaining > 1; --remaining)
        std::swap(order[remaining - 1],
                  order[static_cast<size_t>(generator.next_index(static_cast<int64_t>(remaining)))]);

    auto total_queries = static_cast<double>(dataset.queries.size());
    auto test_target = static_cast<int64_t>(std::llround(test_fraction * total_queries));
    auto validation_target = static_cast<int64_t>(std::llround(validation_fraction * total_queries));
    int64_t test_queries = 0, validation_queries = 0;
    std::vector<Side> side_of_group(queries_in_group.size(), kTrain);
    for (size_t group : order) {
        if (test_queries < test_target) {
            side_of_group[group] = kTest;
            test_queries += queries_in_group[group];
        } else if (validation_queries < validation_target) {
            side_of_group[group] = kValidation;
            validation_queries += queries_in_group[group];
        }
    }

    // 3. Each query goes with its group; each passage goes with the queries it is relevant to,
    //    or, relevant to none, with its own group's side.
    std::vector<Side> side_of_query(dataset.queries.size());
    for (size_t query = 0; query < dataset.queries.size(); ++query)
        side_of_query[query] = side_of_group[group_of_query[query]];
    std::vector<std::array<bool, 3>> passage_on_side(dataset.passages.size(), {false, false, false});
    std::vector<bool> passage_is_relevant(dataset.passages.size(), false);
    for (const Relevance& relevance : dataset.relevance) {
        auto passage = static_cast<size_t>(relevance.passage);
        passage_on_side[passage][side_of_query[static_cast<size_t>(relevance.query)]] = true;
        passage_is_relevant[passage] = true;
    }
    for (size_t passage = 0; passage < dataset.passages.size(); ++passage) {
        if (passage_is_relevant[passage]) continue;
        auto group = group_index.find(dataset.passages[passage].group);
        passage_on_side[passage][group == group_index.end() ? kTrain : side_of_group[group->second]] = true;
    }

    return {build_side(dataset, kTrain, side_of_query, passage_on_side),
            build_side(dataset, kValidation, side_of_query, passage_on_side),
            build_side(dataset, kTest, side_of_query, passage_on_side)};
}

}  // namespace nce::data
