// The cuBLAS handle: one handle for the process (made on first use, on the backend's stream),
// and the plan as one strided-batched call. (One of the three differing pieces.)
#include <cublas_v2.h>

#include "engine/cuda/blas_handle.h"
#include "engine/cuda/stream.h"
#include "engine/error.h"

namespace nce::cuda {
namespace {

cublasHandle_t handle() {
    static cublasHandle_t made = [] {
        cublasHandle_t h = nullptr;
        const cublasStatus_t status = cublasCreate(&h);
        NCE_CHECK(status == CUBLAS_STATUS_SUCCESS, "cuda: cublasCreate failed: {}", cublasGetStatusString(status));
        const cublasStatus_t set = cublasSetStream(h, stream());
        NCE_CHECK(set == CUBLAS_STATUS_SUCCESS, "cuda: cublasSetStream failed: {}", cublasGetStatusString(set));
        return h;
    }();
    return made;
}

cublasOperation_t op(bool transpose) { return transpose ? CUBLAS_OP_T : CUBLAS_OP_N; }

}  // namespace

template <typename T>
void run_gemm_plan(const GemmPlan& p, T alpha, const T* first, const T* second, T beta, T* out) {
    if (p.empty()) return;
    cublasStatus_t status;
    if constexpr (std::is_same_v<T, float>)
        status = cublasSgemmStridedBatched(handle(), op(p.transpose_first), op(p.transpose_second), (int)p.rows,
                                           (int)p.cols, (int)p.depth, &alpha, first, (int)p.ld_first, p.stride_first,
                                           second, (int)p.ld_second, p.stride_second, &beta, out, (int)p.ld_out,
                                           p.stride_out, (int)p.batch);
    else
        status = cublasDgemmStridedBatched(handle(), op(p.transpose_first), op(p.transpose_second), (int)p.rows,
                                           (int)p.cols, (int)p.depth, &alpha, first, (int)p.ld_first, p.stride_first,
                                           second, (int)p.ld_second, p.stride_second, &beta, out, (int)p.ld_out,
                                           p.stride_out, (int)p.batch);
    NCE_CHECK(status == CUBLAS_STATUS_SUCCESS, "cuda: cuBLAS gemm failed: {}", cublasGetStatusString(status));
}

template void run_gemm_plan<float>(const GemmPlan&, float, const float*, const float*, float, float*);
template void run_gemm_plan<double>(const GemmPlan&, double, const double*, const double*, double, double*);

}  // namespace nce::cuda
