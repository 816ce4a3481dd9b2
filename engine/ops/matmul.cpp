#include "engine/ops.h"

namespace nce {

// C = A · B                     A: [m, k]   B: [k, n]   C: [m, n]   (or batched [b, ., .])
//
// C_ij = sum_k A_ik B_kj, so
//   dL/dA_ik = sum_j dL/dC_ij · B_kj    ->  dL/dA = dL/dC · B^T      [m, n]·[n, k]
//   dL/dB_kj = sum_i A_ik · dL/dC_ij    ->  dL/dB = A^T · dL/dC      [k, m]·[m, n]
// With A transposed in the forward (C = A^T B), the same steps give dL/dA = B · dL/dC^T;
// with B transposed (C = A B^T), dL/dB = dL/dC^T · A. A 2-D side shared by a batch gets the
// sum of the per-batch gradients.
Var matmul(const Var& a, const Var& b, Transpose transpose) {
    Tensor c = matmul(a.value(), b.value(), transpose);
    bool ta = transpose == Transpose::First || transpose == Transpose::Both;
    bool tb = transpose == Transpose::Second || transpose == Transpose::Both;
    return Var::from_op("matmul", std::move(c), {a, b},
        [av = a.value(), bv = b.value(), ta, tb](const Tensor& dc) -> Grads {
            Tensor da = ta ? matmul(bv, dc, tb ? Transpose::Both : Transpose::Second)   // B dC^T  (or B^T dC^T)
                           : matmul(dc, bv, tb ? Transpose::None : Transpose::Second);  // dC B^T (or dC B)
            Tensor db = tb ? matmul(dc, av, ta ? Transpose::Both : Transpose::First)   // dC^T A  (or dC^T A^T)
                           : matmul(av, dc, ta ? Transpose::None : Transpose::First);  // A^T dC (or A dC)
            // A 2-D operand used by every batch entry: sum its batch of gradients.
            if (av.rank() == 2 && da.rank() == 3) da = sum(da, 0);
            if (bv.rank() == 2 && db.rank() == 3) db = sum(db, 0);
            return {da, db};
        });
}

}  // namespace nce
