// Embedding lookup: pick rows of a table by index.
#include "engine/ops.h"

namespace nce {

// y[n] = table[indices[n]]      table: [V, D...]   indices: int64 [n...]   y: [n..., D...]
//
// Flatten the indices to [N] and each row of the table to width W = prod(D...), so
// y_i = table_{indices_i} for i < N, with rows of width W. Row r of the table reaches every
// y_i with indices_i = r, so
//   dL/dtable_r = sum over i with indices_i = r of dL/dy_i     [W]
// and rows that no index names get 0. An index that appears twice contributes twice: the
// backward scatter-ADDS the rows of dL/dy into a zero table, it does not overwrite.
// The indices are data (int64): they get no gradient.
Var index_select(const Var& table, const Tensor& indices) {
    NCE_CHECK(indices.defined(), "index_select: the indices are undefined; pass an int64 tensor of row numbers");
    Tensor y = index_select(table.value(), indices);  // checks the dtype and the range of the indices
    return Var::from_op("index_select", std::move(y), {table},
        [indices, table_shape = table.shape()](const Tensor& dy) -> Grads {
            int64_t rows = table_shape[0];
            int64_t width = shape_numel(Shape(table_shape.begin() + 1, table_shape.end()));  // W
            Tensor dtable = Tensor::zeros({rows, width}, dy.dtype(), dy.device());  // [V, W]
            Tensor dy_rows = dy.reshape({indices.numel(), width});                    // [N, W]
            Tensor flat_indices = indices.reshape({indices.numel()});                 // [N]
            backend_for(dy.device()).index_add_rows(dy_rows, flat_indices, dtable);
            return {dtable.reshape(table_shape)};  // [V, D...]
        });
}

}  // namespace nce
