// The row-major to column-major mapping of a GEMM, written once.
//
// The engine's tensors are row-major; cuBLAS (and the host-run's CBLAS calls) are
// column-major. A row-major C [m, n] is, read column-major, C^T [n, m], and
//     C = op(A) · op(B)   <=>   C^T = op(B)^T · op(A)^T,
// so the column-major call multiplies B by A: "first" is B, "second" is A, the result has
// n rows and m columns, and each operand keeps its own transpose flag (a row-major X read
// column-major is already X^T). Leading dimensions are the row-major row lengths.
//
// Batched ([batch, m, k] · [batch, k, n], either side 2-D and shared): one strided-batched
// call, a shared operand with stride 0. When A is batched, untransposed and B is shared,
// the batch folds into one product: the rows of A are contiguous, so [batch·m, k] · [k, n].
#pragma once
#include <cstdint>

namespace nce::cuda {

// The product as the engine states it (Backend::gemm).
struct RowMajorGemm {
    int64_t batch = 1, m = 0, n = 0, k = 0;
    bool transpose_a = false, transpose_b = false;
    bool a_batched = false, b_batched = false;  // 3-D, one matrix per batch entry
};

// One column-major strided-batched call, cublas<t>gemmStridedBatched's arguments: for e in
// [0, batch): out_e [rows, cols] = op(first_e) [rows, depth] · op(second_e) [depth, cols],
// with X_e = X + e · stride_X. first is the engine's B, second its A.
struct GemmPlan {
    bool transpose_first = false, transpose_second = false;
    int64_t rows = 0, cols = 0, depth = 0;
    int64_t ld_first = 1, ld_second = 1, ld_out = 1;
    int64_t stride_first = 0, stride_second = 0, stride_out = 0;
    int64_t batch = 1;

    // Nothing to compute (an empty output); depth 0 is not empty: out = beta · out.
    bool empty() const { return rows == 0 || cols == 0 || batch == 0; }
};

GemmPlan plan_gemm(const RowMajorGemm& gemm);

}  // namespace nce::cuda
