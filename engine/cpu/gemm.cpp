// GEMM through OpenBLAS (engine/blas.h): 2-D, and batched 3-D where a 2-D side is shared by
// the batch.
#include "engine/blas.h"
#include "engine/cpu/cpu_backend.h"

namespace nce::cpu {

void CpuBackend::gemm(const Tensor& a, bool ta, const Tensor& b, bool tb, Tensor& out, double alpha, double beta) {
    dispatch_floating(a.dtype(), "matmul", [&](auto zero) {
        using T = decltype(zero);
        int64_t batch = out.rank() == 3 ? out.size(0) : 1;
        int64_t m = out.size(-2), n = out.size(-1);
        int64_t k = ta ? a.size(-2) : a.size(-1);
        int64_t lda = ta ? m : k, ldb = tb ? k : n;
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
            blas_gemm<T>(false, tb, batch * m, n, k, (T)alpha, a_data, lda, b_data, ldb, (T)beta, c_data, n);
            return;
        }
        auto entry = [&](int64_t i, auto&& product) {
            product(ta, tb, m, n, k, (T)alpha, a_data + (a_batched ? i * m * k : 0), lda,
                    b_data + (b_batched ? i * k * n : 0), ldb, (T)beta, c_data + i * m * n, n);
        };
        // A batch of at least as many entries as threads (an attention's per-head products)
        // runs entry by entry, each whole on one thread; fewer entries split each product.
        if (batch >= num_threads()) {
            parallel_for(batch, 1, [&](int64_t begin, int64_t end) {
                for (int64_t i = begin; i < end; ++i) entry(i, blas_gemm_on_this_thread<T>);
            });
        } else {
            for (int64_t i = 0; i < batch; ++i) entry(i, blas_gemm<T>);
        }
    });
}

}  // namespace nce::cpu
