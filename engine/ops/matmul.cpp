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
// dL/dA needs only B and dL/dB only A: an operand that needs no gradient (input data, a
// constant) gets none, so its product is skipped and the other operand is not kept.
Var matmul(const Var& a, const Var& b, Transpose transpose) {
    Tensor c = matmul(a.value(), b.value(), transpose);
    bool ta = transpose == Transpose::First || transpose == Transpose::Both;
    bool tb = transpose == Transpose::Second || transpose == Transpose::Both;
    const bool a_needs_grad = a.requires_grad(), b_needs_grad = b.requires_grad();
    return Var::from_op("matmul", std::move(c), {a, b},
        [av = b_needs_grad ? a.value() : Tensor(), bv = a_needs_grad ? b.value() : Tensor(), a_rank = a.value().rank(),
         b_rank = b.value().rank(), ta, tb](const Tensor& dc) -> Grads {
            Tensor da, db;
            if (bv.defined()) {
                da = ta ? matmul(bv, dc, tb ? Transpose::Both : Transpose::Second)   // B dC^T  (or B^T dC^T)
                        : matmul(dc, bv, tb ? Transpose::None : Transpose::Second);  // dC B^T (or dC B)
                if (a_rank == 2 && da.rank() == 3) da = sum(da, 0);  // A shared by every batch entry
            }
            if (av.defined()) {
                db = tb ? matmul(dc, av, ta ? Transpose::Both : Transpose::First)   // dC^T A  (or dC^T A^T)
                        : matmul(av, dc, ta ? Transpose::None : Transpose::First);  // A^T dC (or A dC)
                if (b_rank == 2 && db.rank() == 3) db = sum(db, 0);  // B shared by every batch entry
            }
            return {da, db};
        });
}

}  // namespace nce
