#include "losses/random_query_groups.h"

#include <map>
#include <utility>
#include <vector>

namespace nce::losses {
namespace {

// Fisher-Yates shuffle driven by the generator, so an example is a function of its seed.
template <typename T>
void shuffle(std::vector<T>& values, Generator& generator) {
    for (int64_t i = static_cast<int64_t>(values.size()) - 1; i > 0; --i)
        std::swap(values[i], values[generator.next_index(i + 1)]);
}

}  // namespace

Tensor random_query_ids(Generator& generator, int64_t rows) {
    std::vector<int64_t> ids;
    for (int64_t group = 0; static_cast<int64_t>(ids.size()) < rows; ++group) {
        int64_t size = 1 + generator.next_index(3);
        for (int64_t k = 0; k < size && static_cast<int64_t>(ids.size()) < rows; ++k) ids.push_back(group);
    }
    shuffle(ids, generator);
    return Tensor::from_indices(ids, {rows});
}

Tensor random_ranks_in_groups(Generator& generator, const Tensor& qid) {
    std::vector<int64_t> ids = qid.to_indices();
    std::map<int64_t, std::vector<size_t>> members;  // qid -> its rows
    for (size_t i = 0; i < ids.size(); ++i) members[ids[i]].push_back(i);
    std::vector<int64_t> ranks(ids.size(), 0);
    for (auto& [id, rows] : members) {
        shuffle(rows, generator);
        for (size_t r = 0; r < rows.size(); ++r) ranks[rows[r]] = static_cast<int64_t>(r);
    }
    return Tensor::from_indices(ranks, {static_cast<int64_t>(ids.size())});
}

Tensor query_ids_with_a_real_group(Generator& generator, int64_t rows) {
    std::vector<int64_t> ids = random_query_ids(generator, rows).to_indices();
    std::map<int64_t, int64_t> group_size;
    for (int64_t id : ids) ++group_size[id];
    if (group_size.size() == ids.size() && rows >= 2) ids[1] = ids[0];
    // One group holding every row makes every candidate a positive: the loss is then a
    // constant and its gradient zero, which a check cannot tell from a broken backward.
    if (group_size.size() == 1 && rows >= 3) ids[rows - 1] = ids[0] + 1;
    return Tensor::from_indices(ids, {rows});
}

}  // namespace nce::losses
