#include "engine/blas.h"

#include <cblas.h>

#include <algorithm>
#include <type_traits>

#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>

#include "engine/cpu/gemm_bfloat16.h"
#include "engine/gemm_precision.h"
#include "engine/threads.h"

namespace nce {
namespace {

// Below this many multiply-adds a product runs on one thread: splitting costs more than it
// saves (about 0.1 ms of work at this machine's speed).
constexpr int64_t kSplitWork = int64_t{1} << 21;
// Pieces are cut at multiples of this many rows or columns, OpenBLAS's register tile.
constexpr int64_t kPieceMultiple = 16;

}  // namespace

template <typename T>
void blas_gemm_on_this_thread(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, T alpha,
                              const T* a, int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
    if (m <= 0 || n <= 0) return;
    if constexpr (std::is_same_v<T, float>)
        if (gemm_precision() == GemmPrecision::BFloat16)
            return cpu::bfloat16_gemm_on_this_thread(transpose_a, transpose_b, m, n, k, alpha, a, lda, b, ldb, beta,
                                                     c, ldc);
    auto op_a = transpose_a ? CblasTrans : CblasNoTrans, op_b = transpose_b ? CblasTrans : CblasNoTrans;
    if constexpr (std::is_same_v<T, float>)
        cblas_sgemm(CblasRowMajor, op_a, op_b, (int)m, (int)n, (int)k, alpha, a, (int)lda, b, (int)ldb, beta, c,
                    (int)ldc);
    else
        cblas_dgemm(CblasRowMajor, op_a, op_b, (int)m, (int)n, (int)k, alpha, a, (int)lda, b, (int)ldb, beta, c,
                    (int)ldc);
}

template <typename T>
void blas_gemm(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
               int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
    if constexpr (std::is_same_v<T, float>)
        if (gemm_precision() == GemmPrecision::BFloat16)
            return cpu::bfloat16_gemm(transpose_a, transpose_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    int64_t threads = num_threads();
    bool split_rows = m >= n;
    int64_t length = split_rows ? m : n;
    int64_t pieces = std::min(threads, length / kPieceMultiple);
    if (pieces <= 1 || m * n * k < kSplitWork) {
        blas_gemm_on_this_thread(transpose_a, transpose_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
        return;
    }
    // Piece i covers [start(i), start(i + 1)), boundaries rounded to kPieceMultiple.
    auto start = [&](int64_t i) {
        return i == pieces ? length : (length * i / pieces) / kPieceMultiple * kPieceMultiple;
    };
    tbb::parallel_for(
        int64_t{0}, pieces,
        [&](int64_t i) {
            int64_t first = start(i), count = start(i + 1) - first;
            if (split_rows) {  // rows [first, first + count) of op(A) and C
                const T* a_piece = transpose_a ? a + first : a + first * lda;
                blas_gemm_on_this_thread(transpose_a, transpose_b, count, n, k, alpha, a_piece, lda, b, ldb, beta,
                                         c + first * ldc, ldc);
            } else {  // columns [first, first + count) of op(B) and C
                const T* b_piece = transpose_b ? b + first * ldb : b + first;
                blas_gemm_on_this_thread(transpose_a, transpose_b, m, count, k, alpha, a, lda, b_piece, ldb, beta,
                                         c + first, ldc);
            }
        },
        tbb::simple_partitioner());
}

template void blas_gemm<float>(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*,
                               int64_t, float, float*, int64_t);
template void blas_gemm<double>(bool, bool, int64_t, int64_t, int64_t, double, const double*, int64_t,
                                const double*, int64_t, double, double*, int64_t);
template void blas_gemm_on_this_thread<float>(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t,
                                              const float*, int64_t, float, float*, int64_t);
template void blas_gemm_on_this_thread<double>(bool, bool, int64_t, int64_t, int64_t, double, const double*,
                                               int64_t, const double*, int64_t, double, double*, int64_t);

}  // namespace nce
