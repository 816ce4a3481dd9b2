// The fused, row-blocked CPU kernels behind infonce and infonce_symmetric.
//
// The plain way to compute InfoNCE forms the whole logit matrix l = q C^T / tau [N, N+M],
// then sweeps it again and again: the scaling, the row maximum, exp, the row sums, the
// subtraction of the targets, the division by N; at N = 65536 that matrix alone is 16 GiB
// in float32. These kernels instead walk the rows of l in blocks of `block_rows` rows and
// do everything a block needs while it is still in cache:
//
//   for each block of rows q_b (R rows of q):
//     l_b  = q_b C^T / tau                        [R, N+M]   one GEMM, 1/tau folded into it
//     one pass per row: max, exp, sum -> lse; then G_b = (P_b - Y_b) / N written over l_b
//     dq_b = G_b C / tau                          [R, d]     GEMM
//     dC  += G_b^T q_b / tau                      [N+M, d]   GEMM, accumulated block by block
//
// The loss is a scalar, so its gradient at dy = 1 is computed in the same sweep as the
// loss, and the node's backward only multiplies it by dy: no logit is kept, three GEMMs in
// all, and the memory held is one block plus the gradients (O(N d)).
//
// The symmetric loss also needs each column's lse (the p->q direction is the column
// softmax of the same logits, restricted to the first N columns), which is known only after
// every row has been seen: a first sweep gathers the row and column statistics, a second
// forms G and the two gradient GEMMs. Below a memory budget the first sweep keeps the
// logits (three GEMMs); above it, or when block_rows is given, the second sweep forms each
// block's logits again (four GEMMs) and nothing N x (N+M) is ever held.
//
// Each loss keeps its plain, unfused form in losses/infonce_reference.cpp; the tests check
// that the two agree for every block size.
#pragma once
#include <cstdint>

#include "engine/nce.h"

namespace nce::losses {

// How the logits are blocked. block_rows = 0: chosen automatically (logit_block_rows; the
// symmetric loss keeps the whole logit matrix while it fits kLogitMemoryBudget bytes).
// block_rows > 0: blocks of that many rows (the last may be shorter), and the whole matrix
// is never held unless block_rows >= N.
struct LogitBlocking {
    int64_t block_rows = 0;
};

// The largest logit matrix the symmetric loss keeps whole when block_rows is automatic.
constexpr int64_t kLogitMemoryBudget = int64_t{512} << 20;  // bytes

// Automatic block height. Each block's GEMMs pack all of C [N+M, d] again, so tall blocks
// amortise the packing (1024 rows ran about 10% faster than 256 at N = 4096, d = 384;
// benchmarks/README.md), while a block stays under kBlockMemoryCap bytes (and >= 64 rows).
constexpr int64_t kAutomaticBlockRows = 1024;
constexpr int64_t kBlockMemoryCap = int64_t{256} << 20;  // bytes

// The loss and, when asked for, its gradients at dy = 1.
struct InfonceSweep {
    double loss = 0;
    Tensor dq;                 // [N, d]
    Tensor dp;                 // [N, d]
    Tensor dnegatives;         // [M, d]; undefined without negatives
    double dloss_dtau = 0;     // -(1/tau) sum_ij G_ij l_ij
};

// One direction: q, p [N, d], negatives [M, d] or undefined; C = [p; negatives].
//   L = (1/N) sum_i ( lse_j l_ij - l_ii ),   l = q C^T / tau
// CPU tensors of one float dtype, already checked by the caller.
InfonceSweep infonce_sweep(const Tensor& q, const Tensor& p, const Tensor& negatives, double tau, bool with_gradient,
                           LogitBlocking blocking);

// Both directions, a = q C^T / tau [N, N+M] and b = p q^T / tau = a[:, :N]^T:
//   L = 1/2 [ (1/N) sum_i ( lse_j a_ij - a_ii ) + (1/N) sum_j ( lse_i a_ij - a_jj ) ]   (j < N in the second)
InfonceSweep infonce_symmetric_sweep(const Tensor& q, const Tensor& p, const Tensor& negatives, double tau,
                                     bool with_gradient, LogitBlocking blocking);

// The block height the kernels use for `rows` rows of q against `columns` candidates, and
// the check that block_rows is not negative.
int64_t logit_block_rows(LogitBlocking blocking, int64_t rows, int64_t columns, Dtype dtype);
// Whether infonce_symmetric keeps the whole [rows, columns] logit matrix between its two
// sweeps (three GEMMs) rather than forming each block again (four).
bool symmetric_keeps_logits(LogitBlocking blocking, int64_t rows, int64_t columns, Dtype dtype);

}  // namespace nce::losses
