// Collectives on tensors: what every rank of the world does together, in the same order.
//
// Every rank must call the same collectives in the same order with tensors that fit each
// other (the row-wise ones check this first: they exchange each rank's shape and dtype and
// throw the same nce::Error on every rank when they do not fit, so no rank is left waiting).
// In a one-process world each one is the identity and sends nothing.
//
// Tensors are CPU tensors of any dtype; row-wise collectives work on the first axis and
// allow a different number of rows on each rank (uneven slices).
//
// Bytes. Every collective counts what it sends (communication_stats()), in two measures:
//   payload: the bytes of this rank's own tensor handed to the collective;
//   ring:    the bytes this rank sends when the collective runs as a ring over the K ranks,
//            the bandwidth-optimal algorithm for large messages (whatever MPI chose):
//              all-gather      all blocks but the next rank's      ≈ (K-1)/K · gathered bytes
//              reduce-scatter  all blocks but its own               ≈ (K-1)/K · input bytes
//              all-reduce      a reduce-scatter then an all-gather  ≈ 2 (K-1)/K · bytes
//              broadcast       the whole tensor, by every rank but the last of the chain
// docs/scaling.md uses the ring bytes to work out what larger worlds send per step.
#pragma once
#include <cstdint>
#include <vector>

#include "engine/nce.h"

namespace nce::distributed {

struct CollectiveBytes {
    int64_t calls = 0;
    int64_t payload_bytes = 0;
    int64_t ring_bytes = 0;
    double seconds = 0;  // wall time spent inside these collectives (waiting for other ranks included)
};

struct CommunicationStats {
    CollectiveBytes all_gather;
    CollectiveBytes reduce_scatter;
    CollectiveBytes all_reduce;
    CollectiveBytes broadcast;
    CollectiveBytes total() const;
};

// Counted since the process started or since the last reset.
const CommunicationStats& communication_stats();
void reset_communication_stats();

// Every rank's value, in rank order.
std::vector<int64_t> all_gather_values(int64_t local_value);

// The rows of every rank stacked in rank order: local [n_r, ...] -> [sum_r n_r, ...].
// Ranks may hold different row counts (zero included) but must agree on the dtype and the
// other axes. rows_per_rank, when given, receives n_0 .. n_{K-1}.
Tensor all_gather_rows(const Tensor& local, std::vector<int64_t>* rows_per_rank = nullptr);

// The reverse of all_gather_rows: every rank passes a full [sum_r n_r, ...] tensor and gets
// back, for its own block of rows, the sum over ranks of that block.  -> [n_rank, ...]
Tensor reduce_scatter_rows(const Tensor& full, const std::vector<int64_t>& rows_per_rank);

// Sums a float tensor over the ranks, in place: every rank ends with the same sum.
void all_reduce_sum_inplace(Tensor& x);
double all_reduce_sum(double local_value);
// The largest of every rank's value.
double all_reduce_max(double local_value);

// Overwrites x on every rank with the root's x (same shape and dtype on every rank).
void broadcast_inplace(Tensor& x, int root = 0);
// The root's value on every rank.
uint64_t broadcast_value(uint64_t value, int root = 0);

// Waits until every rank gets here.
void barrier();

}  // namespace nce::distributed
