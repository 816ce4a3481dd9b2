#include "distributed/collectives.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <numeric>

#include "distributed/sharding.h"
#include "distributed/world.h"

#ifdef NCE_HAVE_MPI
#include <mpi.h>
#endif

namespace nce::distributed {

namespace {

CommunicationStats& mutable_stats() {
    static CommunicationStats stats;
    return stats;
}

using Clock = std::chrono::steady_clock;

[[maybe_unused]] void count(CollectiveBytes& counter, int64_t payload_bytes, int64_t ring_bytes,
                            Clock::time_point start) {
    counter.calls += 1;
    counter.payload_bytes += payload_bytes;
    counter.ring_bytes += ring_bytes;
    counter.seconds += std::chrono::duration<double>(Clock::now() - start).count();
}

bool many_ranks() { return world().size() > 1; }

void check_cpu(const Tensor& x, const char* collective) {
    NCE_CHECK(x.defined(), "{}: the tensor is undefined; every rank must pass one", collective);
    NCE_CHECK(x.device() == Device::CPU,
              "{}: the tensor is on {}; collectives take CPU tensors (move it with .to(Device::CPU))", collective,
              device_name(x.device()));
}

// The bytes of one row of x (the product of the other axes times the element size).
[[maybe_unused]] int64_t row_bytes(const Tensor& x) {
    int64_t elements = 1;
    for (int64_t axis = 1; axis < x.rank(); ++axis) elements *= x.size(axis);
    return elements * static_cast<int64_t>(dtype_size(x.dtype()));
}

#ifdef NCE_HAVE_MPI
MPI_Datatype mpi_type(Dtype dtype) {
    switch (dtype) {
        case Dtype::Float32: return MPI_FLOAT;
        case Dtype::Float64: return MPI_DOUBLE;
        case Dtype::Int64: return MPI_INT64_T;
    }
    fail("collectives: unknown dtype");
}

// MPI counts are ints: a message of 2^31 elements or more has to be split by the caller.
int mpi_count(int64_t elements, const char* collective) {
    NCE_CHECK(elements <= INT32_MAX, "{}: {} elements exceed MPI's int count; send smaller tensors (fewer rows)",
              collective, elements);
    return static_cast<int>(elements);
}

// A short fingerprint of a tensor's layout for checking that ranks agree: rank (number of
// axes), dtype and the sizes of axes 1.. (the row shape), packed into int64 values.
std::vector<int64_t> layout_of(const Tensor& x) {
    std::vector<int64_t> layout{x.rank(), static_cast<int64_t>(x.dtype())};
    for (int64_t axis = 1; axis < x.rank(); ++axis) layout.push_back(x.size(axis));
    layout.resize(8, -1);  // fixed width: at most 7 axes besides the row axis are compared
    return layout;
}
#endif

}  // namespace

CollectiveBytes CommunicationStats::total() const {
    CollectiveBytes sum;
    for (const CollectiveBytes* part : {&all_gather, &reduce_scatter, &all_reduce, &broadcast}) {
        sum.calls += part->calls;
        sum.payload_bytes += part->payload_bytes;
        sum.ring_bytes += part->ring_bytes;
        sum.seconds += part->seconds;
    }
    return sum;
}

const CommunicationStats& communication_stats() { return mutable_stats(); }
void reset_communication_stats() { mutable_stats() = CommunicationStats(); }

std::vector<int64_t> all_gather_values(int64_t local_value) {
    std::vector<int64_t> values(static_cast<size_t>(world().size()), local_value);
#ifdef NCE_HAVE_MPI
    if (many_ranks())
        MPI_Allgather(&local_value, 1, MPI_INT64_T, values.data(), 1, MPI_INT64_T, MPI_COMM_WORLD);
#endif
    return values;
}

Tensor all_gather_rows(const Tensor& local, std::vector<int64_t>* rows_per_rank) {
    check_cpu(local, "all_gather_rows");
    NCE_CHECK(local.rank() >= 1, "all_gather_rows: the tensor has shape {}; it needs a row axis",
              shape_string(local.shape()));
    if (!many_ranks()) {
        if (rows_per_rank) *rows_per_rank = {local.size(0)};
        return local;
    }
#ifdef NCE_HAVE_MPI
    const Clock::time_point start = Clock::now();
    const int size = world().size();
    // Every rank's row count and row layout, so a mismatch is found by all ranks alike.
    std::vector<int64_t> my_layout = layout_of(local);
    my_layout.push_back(local.size(0));
    const size_t width = my_layout.size();
    std::vector<int64_t> layouts(width * static_cast<size_t>(size));
    MPI_Allgather(my_layout.data(), static_cast<int>(width), MPI_INT64_T, layouts.data(), static_cast<int>(width),
                  MPI_INT64_T, MPI_COMM_WORLD);
    std::vector<int64_t> rows(static_cast<size_t>(size));
    for (int r = 0; r < size; ++r) {
        const int64_t* theirs = layouts.data() + width * static_cast<size_t>(r);
        NCE_CHECK(std::equal(theirs, theirs + width - 1, my_layout.data()),
                  "all_gather_rows: rank {} holds a tensor whose rows differ from rank 0's (shape {} here, dtype {}); "
                  "every rank must gather rows of the same shape and dtype",
                  r, shape_string(local.shape()), dtype_name(local.dtype()));
        rows[static_cast<size_t>(r)] = theirs[width - 1];
    }

    const int64_t bytes_per_row = row_bytes(local);
    Shape shape = local.shape();
    shape[0] = std::accumulate(rows.begin(), rows.end(), int64_t{0});
    Tensor gathered = Tensor::empty(shape, local.dtype());
    const int64_t elements_per_row = bytes_per_row / static_cast<int64_t>(dtype_size(local.dtype()));
    std::vector<int> counts(static_cast<size_t>(size)), displacements(static_cast<size_t>(size));
    int64_t offset = 0;
    for (int r = 0; r < size; ++r) {
        counts[static_cast<size_t>(r)] = mpi_count(rows[static_cast<size_t>(r)] * elements_per_row, "all_gather_rows");
        displacements[static_cast<size_t>(r)] = mpi_count(offset, "all_gather_rows");
        offset += rows[static_cast<size_t>(r)] * elements_per_row;
    }
    MPI_Datatype type = mpi_type(local.dtype());
    MPI_Allgatherv(local.raw_data(), counts[static_cast<size_t>(world().rank())], type, gathered.raw_data(),
                   counts.data(), displacements.data(), type, MPI_COMM_WORLD);

    const int next = (world().rank() + 1) % size;
    count(mutable_stats().all_gather, static_cast<int64_t>(local.nbytes()),
          static_cast<int64_t>(gathered.nbytes()) - rows[static_cast<size_t>(next)] * bytes_per_row, start);
    if (rows_per_rank) *rows_per_rank = std::move(rows);
    return gathered;
#else
    return local;
#endif
}

Tensor reduce_scatter_rows(const Tensor& full, const std::vector<int64_t>& rows_per_rank) {
    check_cpu(full, "reduce_scatter_rows");
    check_floating(full, "reduce_scatter_rows", "tensor");
    NCE_CHECK(static_cast<int>(rows_per_rank.size()) == world().size(),
              "reduce_scatter_rows: {} row counts for a world of {} processes; give one per rank", rows_per_rank.size(),
              world().size());
    const int64_t total_rows = std::accumulate(rows_per_rank.begin(), rows_per_rank.end(), int64_t{0});
    NCE_CHECK(full.rank() >= 1 && full.size(0) == total_rows,
              "reduce_scatter_rows: the tensor has shape {} but the ranks' row counts add up to {}",
              shape_string(full.shape()), total_rows);
    if (!many_ranks()) return full;
#ifdef NCE_HAVE_MPI
    const Clock::time_point start = Clock::now();
    const int size = world().size(), rank = world().rank();
    const int64_t bytes_per_row = row_bytes(full);
    const int64_t elements_per_row = bytes_per_row / static_cast<int64_t>(dtype_size(full.dtype()));
    std::vector<int> counts(static_cast<size_t>(size));
    for (int r = 0; r < size; ++r)
        counts[static_cast<size_t>(r)] = mpi_count(rows_per_rank[static_cast<size_t>(r)] * elements_per_row,
                                                   "reduce_scatter_rows");
    Shape shape = full.shape();
    shape[0] = rows_per_rank[static_cast<size_t>(rank)];
    Tensor mine = Tensor::empty(shape, full.dtype());
    MPI_Reduce_scatter(full.raw_data(), mine.raw_data(), counts.data(), mpi_type(full.dtype()), MPI_SUM,
                       MPI_COMM_WORLD);
    count(mutable_stats().reduce_scatter, static_cast<int64_t>(full.nbytes()),
          static_cast<int64_t>(full.nbytes()) - static_cast<int64_t>(mine.nbytes()), start);
    return mine;
#else
    return full;
#endif
}

void all_reduce_sum_inplace(Tensor& x) {
    check_cpu(x, "all_reduce_sum");
    check_floating(x, "all_reduce_sum", "tensor");
    if (!many_ranks()) return;
#ifdef NCE_HAVE_MPI
    // A reduce-scatter, then an all-gather of the sums: each element is summed once, by the
    // rank that owns its share, and copied to the others, so every rank ends with the same
    // bits. (MPI_Allreduce may add in a different order on different ranks; the replicas'
    // weights would then drift apart by rounding.)
    const Clock::time_point start = Clock::now();
    const int size = world().size();
    const int64_t elements = x.numel();
    std::vector<int> counts(static_cast<size_t>(size)), displacements(static_cast<size_t>(size));
    for (int r = 0; r < size; ++r) {
        RowRange share{elements * r / size, elements * (r + 1) / size};
        counts[static_cast<size_t>(r)] = mpi_count(share.end - share.begin, "all_reduce_sum");
        displacements[static_cast<size_t>(r)] = mpi_count(share.begin, "all_reduce_sum");
    }
    const size_t mine = static_cast<size_t>(world().rank());
    const size_t element_bytes = dtype_size(x.dtype());
    MPI_Datatype type = mpi_type(x.dtype());
    Tensor sums = Tensor::empty({std::max(counts[mine], 1)}, x.dtype());
    MPI_Reduce_scatter(x.raw_data(), sums.raw_data(), counts.data(), type, MPI_SUM, MPI_COMM_WORLD);
    std::memcpy(static_cast<char*>(x.raw_data()) + static_cast<size_t>(displacements[mine]) * element_bytes,
                sums.raw_data(), static_cast<size_t>(counts[mine]) * element_bytes);
    MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, x.raw_data(), counts.data(), displacements.data(), type,
                   MPI_COMM_WORLD);
    const int64_t bytes = static_cast<int64_t>(x.nbytes());
    count(mutable_stats().all_reduce, bytes, 2 * bytes * (size - 1) / size, start);
#endif
}

double all_reduce_sum(double local_value) {
    Tensor value = Tensor::scalar(local_value, Dtype::Float64);
    all_reduce_sum_inplace(value);
    return value.item();
}

double all_reduce_max(double local_value) {
#ifdef NCE_HAVE_MPI
    if (many_ranks()) MPI_Allreduce(MPI_IN_PLACE, &local_value, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
#endif
    return local_value;
}

void broadcast_inplace(Tensor& x, int root) {
    check_cpu(x, "broadcast");
    NCE_CHECK(root >= 0 && root < world().size(), "broadcast: root rank {} is not in a world of {} processes", root,
              world().size());
    if (!many_ranks()) return;
#ifdef NCE_HAVE_MPI
    const Clock::time_point start = Clock::now();
    std::vector<int64_t> my_layout = layout_of(x);
    my_layout.push_back(x.numel());
    std::vector<int64_t> root_layout = my_layout;
    MPI_Bcast(root_layout.data(), static_cast<int>(root_layout.size()), MPI_INT64_T, root, MPI_COMM_WORLD);
    bool fits = root_layout == my_layout;
    // Every rank must learn whether all fit, or the ranks that fit would wait in the broadcast.
    int all_fit = fits ? 1 : 0;
    MPI_Allreduce(MPI_IN_PLACE, &all_fit, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    NCE_CHECK(all_fit == 1, "broadcast: the ranks hold tensors of different shapes or dtypes (shape {} and dtype {} "
              "on rank {}); every rank must pass the same shape and dtype as the root",
              shape_string(x.shape()), dtype_name(x.dtype()), world().rank());
    MPI_Bcast(x.raw_data(), mpi_count(x.numel(), "broadcast"), mpi_type(x.dtype()), root, MPI_COMM_WORLD);
    const bool last_of_chain = world().rank() == (root + world().size() - 1) % world().size();
    count(mutable_stats().broadcast, world().rank() == root ? static_cast<int64_t>(x.nbytes()) : 0,
          last_of_chain ? 0 : static_cast<int64_t>(x.nbytes()), start);
#endif
}

uint64_t broadcast_value(uint64_t value, int root) {
#ifdef NCE_HAVE_MPI
    if (many_ranks()) MPI_Bcast(&value, 1, MPI_UINT64_T, root, MPI_COMM_WORLD);
#else
    (void)root;
#endif
    return value;
}

void barrier() {
#ifdef NCE_HAVE_MPI
    if (many_ranks()) MPI_Barrier(MPI_COMM_WORLD);
#endif
}

}  // namespace nce::distributed
