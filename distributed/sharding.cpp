#include "distributed/sharding.h"

#include <numeric>
#include <utility>

#include "distributed/world.h"

namespace nce::distributed {

RowRange shard_rows(int64_t global_rows, int rank, int world_size) {
    NCE_CHECK(world_size >= 1 && rank >= 0 && rank < world_size,
              "shard_rows: rank {} is not in a world of {} processes", rank, world_size);
    NCE_CHECK(global_rows >= 0, "shard_rows: the global batch has {} rows", global_rows);
    const int64_t base = global_rows / world_size, extra = global_rows % world_size;
    RowRange range;
    range.begin = rank * base + std::min<int64_t>(rank, extra);
    range.end = range.begin + base + (rank < extra ? 1 : 0);
    return range;
}

RowRange local_rows(int64_t global_rows) { return shard_rows(global_rows, world().rank(), world().size()); }

Tensor local_slice(const Tensor& global_batch) {
    NCE_CHECK(global_batch.defined() && global_batch.rank() >= 1,
              "local_slice: the global batch must be a tensor with a row axis");
    RowRange range = local_rows(global_batch.size(0));
    return slice(global_batch, 0, range.begin, range.end);
}

std::vector<int64_t> shuffled_order(int64_t count, uint64_t seed) {
    NCE_CHECK(count >= 0, "shuffled_order: count must be >= 0, got {}", count);
    std::vector<int64_t> order(static_cast<size_t>(count));
    std::iota(order.begin(), order.end(), int64_t{0});
    Generator generator(seed);
    for (int64_t i = count - 1; i > 0; --i) std::swap(order[static_cast<size_t>(i)],
                                                      order[static_cast<size_t>(generator.next_index(i + 1))]);
    return order;
}

}  // namespace nce::distributed
