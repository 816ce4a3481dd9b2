// Sharding the data: which rows of the global batch this rank embeds.
//
// Every rank builds the same global batches (the same seeded shuffle, the same order) and
// takes its contiguous slice of each, so together the ranks see exactly the batch one
// process would see, and a rank's slice is [first, first + rows) of it. Slices are as even
// as possible: with N rows over K ranks, the first N mod K ranks get one row more.
#pragma once
#include <cstdint>
#include <vector>

#include "engine/nce.h"

namespace nce::distributed {

struct RowRange {
    int64_t begin = 0;
    int64_t end = 0;
    int64_t size() const { return end - begin; }
};

// Rank `rank`'s slice of `global_rows` rows over `world_size` ranks.
RowRange shard_rows(int64_t global_rows, int rank, int world_size);
// This rank's slice in this process's world.
RowRange local_rows(int64_t global_rows);

// This rank's rows of a global batch tensor [N, ...] -> [n_rank, ...].
Tensor local_slice(const Tensor& global_batch);
// This rank's entries of a global list (example indices, texts).
template <typename T>
std::vector<T> local_slice(const std::vector<T>& global_list) {
    RowRange range = local_rows(static_cast<int64_t>(global_list.size()));
    return std::vector<T>(global_list.begin() + range.begin, global_list.begin() + range.end);
}

// 0 .. count-1 shuffled by `seed` (Fisher-Yates over a Generator): the same on every rank.
std::vector<int64_t> shuffled_order(int64_t count, uint64_t seed);

}  // namespace nce::distributed
