#include "distributed/gather_rows.h"

#include "distributed/collectives.h"
#include "distributed/world.h"

namespace nce::distributed {

// Y = [X_0; X_1; ...; X_{K-1}]          X_r: [n_r, d] on rank r     Y: [N, d] on every rank, N = sum_r n_r
//
// Each rank r computes its own loss L_r from its own copy of Y, and what is trained is their
// sum L = sum_r L_r (the distributed losses scale each rank's share so that this sum is the
// loss of the whole global batch). X_s reaches L through every rank's copy of Y, so
//   dL/dX_s = sum_r dL_r/dY^(r) [rows of s]                         [n_s, d]
// Rank r's backward receives dy = dL_r/dY^(r) [N, d]: its own loss's gradient for every
// rank's rows. Summing those over the ranks and keeping block s on rank s is exactly a
// reduce-scatter:  dL/dX_s = reduce_scatter(dy)[s].
// Nothing else is needed: no division by the world size (the losses are already shares of
// the global loss) and no all-reduce of dy (each rank needs only its own rows).
GatheredRows gather_rows(const Var& local) {
    NCE_CHECK(local.defined(), "gather_rows: the local rows are undefined; every rank must pass its rows");
    GatheredRows result;
    Tensor gathered = all_gather_rows(local.value(), &result.rows_per_rank);  // Y [N, d]
    for (int r = 0; r < world().rank(); ++r) result.first_row += result.rows_per_rank[static_cast<size_t>(r)];
    result.rows = Var::from_op("gather_rows", std::move(gathered), {local},
                               [rows_per_rank = result.rows_per_rank](const Tensor& dy) -> Grads {
                                   // sum over r of dL_r/dY, my rows      [n_s, d]
                                   return {reduce_scatter_rows(dy, rows_per_rank)};
                               });
    return result;
}

}  // namespace nce::distributed
