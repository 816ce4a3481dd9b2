// Scatter-add: sum rows of a source into the rows that an index names.
#include "engine/ops.h"

namespace nce {

// y[r] = sum over n with indices[n] = r of source[n]     source: [N, W...]   indices: int64 [N]
//                                                         y: [rows, W...]
// The adjoint of index_select. Flatten each row to width W = prod(W...). y_r is a sum, so
// each source row that names r reaches y_r with weight 1 and no other y:
//   dL/dsource_n = dL/dy_{indices_n}      [W]
// that is, the backward is index_select of dL/dy by the same indices. A row named twice gets
// both sources (the forward adds, it does not overwrite); a row no index names is 0. The
// indices are data (int64): they get no gradient.
Var index_add(const Var& source, const Tensor& indices, int64_t rows) {
    NCE_CHECK(indices.defined() && indices.dtype() == Dtype::Int64 && indices.rank() == 1,
              "index_add: the indices must be an int64 vector [N], got {} {}",
              indices.defined() ? dtype_name(indices.dtype()) : "undefined",
              indices.defined() ? shape_string(indices.shape()) : "");
    NCE_CHECK(source.value().rank() >= 1 && source.shape()[0] == indices.size(0),
              "index_add: source {} needs one row per index ({} indices)", shape_string(source.shape()),
              indices.size(0));
    NCE_CHECK(rows >= 1, "index_add: rows must be >= 1, got {}", rows);
    Shape out_shape = source.shape();
    out_shape[0] = rows;
    const int64_t width = shape_numel(Shape(out_shape.begin() + 1, out_shape.end()));  // W
    Tensor y = Tensor::zeros({rows, width}, source.value().dtype(), source.value().device());
    backend_for(y.device())
        .index_add_rows(source.value().reshape({indices.size(0), width}), indices, y);  // checks the range
    return Var::from_op("index_add", y.reshape(out_shape), {source},
        [indices, source_shape = source.shape()](const Tensor& dy) -> Grads {
            Tensor dy_rows = dy.reshape({dy.size(0), dy.numel() / dy.size(0)});  // [rows, W]
            return {index_select(dy_rows, indices).reshape(source_shape)};       // [N, W...]
        });
}

}  // namespace nce
