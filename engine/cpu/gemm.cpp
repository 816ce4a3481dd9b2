// GEMM through OpenBLAS: 2-D, and batched 3-D where a 2-D side is shared by the batch.
#include <cblas.h>

#include "engine/cpu/cpu_backend.h"

namespace nce::cpu {
namespace {

constexpr int64_t kSingleThreadedBlasSize = 4 * 65536;  // OpenBLAS: GEMM_MULTITHREAD_THRESHOLD · SMP_THRESHOLD_MIN

template <typename T>
void blas_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, T alpha, const T* a, const T* b, T beta, T* c) {
    auto op_a = ta ? CblasTrans : CblasNoTrans, op_b = tb ? CblasTrans : CblasNoTrans;
    int lda = static_cast<int>(ta ? m : k), ldb = static_cast<int>(tb ? k : n), ldc = static_cast<int>(n);
    if constexpr (std::is_same_v<T, float>)
        cblas_sgemm(CblasRowMajor, op_a, op_b, (int)m, (int)n, (int)k, alpha, a, lda, b, ldb, beta, c, ldc);
    else
        cblas_dgemm(CblasRowMajor, op_a, op_b, (int)m, (int)n, (int)k, alpha, a, lda, b, ldb, beta, c, ldc);
}

}  // namespace

void CpuBackend::gemm(const Tensor& a, bool ta, const Tensor& b, bool tb, Tensor& out, double alpha, double beta) {
    num_threads();  // applies NCE_NUM_THREADS to OpenBLAS before its first call
    dispatch_floating(a.dtype(), "matmul", [&](auto zero) {
        using T = decltype(zero);
        int64_t batch = out.rank() == 3 ? out.size(0) : 1;
        int64_t m = out.size(-2), n = out.size(-1);
        int64_t k = ta ? a.size(-2) : a.size(-1);
        const T* a_data = a.data<T>();
        const T* b_data = b.data<T>();
        T* c_data = out.data<T>();
        if (m == 0 || n == 0) return;
        if (k == 0) {  // an empty sum: out = beta · out
            for (int64_t i = 0; i < out.numel(); ++i) c_data[i] = beta == 0 ? T(0) : static_cast<T>(beta) * c_data[i];
            return;
        }
        bool a_batched = a.rank() == 3, b_batched = b.rank() == 3;
        if (batch > 1 && a_batched && !b_batched && !ta) {
            // [batch, m, k]·[k, n] is one [batch·m, k]·[k, n] GEMM.
            blas_gemm<T>(false, tb, batch * m, n, k, (T)alpha, a_data, b_data, (T)beta, c_data);
            return;
        }
        auto gemm_entries = [&](int64_t begin, int64_t end) {
            for (int64_t i = begin; i < end; ++i) {
                blas_gemm<T>(ta, tb, m, n, k, (T)alpha, a_data + (a_batched ? i * m * k : 0),
                             b_data + (b_batched ? i * k * n : 0), (T)beta, c_data + i * m * n);
            }
        };
        // OpenBLAS runs a product of m·n·k <= 262144 (4 · 65536, its multithreading
        // threshold) on the calling thread alone, so a batch of such products, an
        // attention's per-head [T, T] products, would leave the other cores idle: split the
        // batch over the engine's threads instead. Each entry is one whole call on one thread,
        // so the numbers do not depend on the split.
        if (batch > 1 && m * n * k <= kSingleThreadedBlasSize)
            parallel_for(batch, 1, gemm_entries);
        else
            gemm_entries(0, batch);
    });
}

}  // namespace nce::cpu
