// GEMM for the whole project: OpenBLAS's kernels, split over the engine's threads.
//
// OpenBLAS runs single-threaded; the engine cuts the output C into one contiguous piece per
// thread (rows when C is tall, columns when it is wide) and oneTBB runs each piece as one
// OpenBLAS call. One thread pool then serves both the loops and the GEMMs, so the two never
// spin against each other for the same cores, and every element of C is summed by one call
// in OpenBLAS's fixed order: the same inputs and thread count give the same bits.
//
// float32 products follow the engine's GEMM precision (engine/gemm_precision.h): in
// BFloat16 mode they go to oneDNN with bfloat16-rounded operands instead
// (engine/cpu/gemm_bfloat16.h), split over the same threads the same way. float64 products
// are always OpenBLAS's.
#pragma once
#include <cstdint>

namespace nce {

// C = alpha · op(A) · op(B) + beta · C, row-major, with explicit leading dimensions so that
// a block of rows or columns is a pointer and a stride:
//   op(A) [m, k], op(B) [k, n], C [m, n]; op(X) = X^T when transpose_x.
template <typename T>
void blas_gemm(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
               int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc);

// The same product on the calling thread alone (for callers that split work themselves).
template <typename T>
void blas_gemm_on_this_thread(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, T alpha,
                              const T* a, int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc);

}  // namespace nce
