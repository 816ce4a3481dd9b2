// gather_rows: the differentiable all-gather. Every rank passes its own rows and gets the
// rows of every rank, stacked in rank order; gradients flow back to the rank that owns
// each row.
#pragma once
#include <cstdint>
#include <vector>

#include "engine/nce.h"

namespace nce::distributed {

struct GatheredRows {
    Var rows;                            // [sum_r n_r, ...], the same on every rank
    std::vector<int64_t> rows_per_rank;  // n_0 .. n_{K-1}
    int64_t first_row = 0;               // where this rank's own rows start in `rows`
    int64_t total_rows() const { return rows.size(0); }
};

// local: [n_r, ...] on rank r (row counts may differ between ranks; dtype and the other
// axes may not). Every rank must call it, in the same order, and every rank's loss must
// depend on the result when any does (the backward is a collective too).
GatheredRows gather_rows(const Var& local);

}  // namespace nce::distributed
