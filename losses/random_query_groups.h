// Random query groups for the `example` problems of the grouped losses (multi_positive,
// rank_infonce, hard_negative_infonce): query ids with real groups, and ranks within them.
// Embeddings come from losses/random_inputs.h.
#pragma once
#include <cstdint>

#include "engine/nce.h"

namespace nce::losses {

// int64 [rows]: query ids forming groups of 1 to 3 rows, scattered over the batch (a
// group's rows are not adjacent in general).
Tensor random_query_ids(Generator& generator, int64_t rows);

// The same, with at least one group of two or more rows (rows >= 2): when the draw has none,
// row 1 joins row 0's group, and never one group holding every row (rows >= 3): when the draw
// is one group, the last row leaves it. For the losses whose gradient only moves inside a group.
Tensor query_ids_with_a_real_group(Generator& generator, int64_t rows);

// int64 [rows]: within each group of `qid`, the ranks 0 .. |G|-1 in random order.
Tensor random_ranks_in_groups(Generator& generator, const Tensor& qid);

}  // namespace nce::losses
