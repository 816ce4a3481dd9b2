// The host-run BLAS handle: the plan's column-major call, entry by entry, through CBLAS in
// column-major order, with exactly cuBLAS's arguments. (One of the three differing pieces.)
#include <cblas.h>

#include <type_traits>

#include "engine/cuda/blas_handle.h"

namespace nce::cuda {

template <typename T>
void run_gemm_plan(const GemmPlan& p, T alpha, const T* first, const T* second, T beta, T* out) {
    if (p.empty()) return;
    const auto op_first = p.transpose_first ? CblasTrans : CblasNoTrans;
    const auto op_second = p.transpose_second ? CblasTrans : CblasNoTrans;
    for (int64_t e = 0; e < p.batch; ++e) {
        const T* f = first + e * p.stride_first;
        const T* s = second + e * p.stride_second;
        T* o = out + e * p.stride_out;
        if constexpr (std::is_same_v<T, float>)
            cblas_sgemm(CblasColMajor, op_first, op_second, (int)p.rows, (int)p.cols, (int)p.depth, alpha, f,
                        (int)p.ld_first, s, (int)p.ld_second, beta, o, (int)p.ld_out);
        else
            cblas_dgemm(CblasColMajor, op_first, op_second, (int)p.rows, (int)p.cols, (int)p.depth, alpha, f,
                        (int)p.ld_first, s, (int)p.ld_second, beta, o, (int)p.ld_out);
    }
}

template void run_gemm_plan<float>(const GemmPlan&, float, const float*, const float*, float, float*);
template void run_gemm_plan<double>(const GemmPlan&, double, const double*, const double*, double, double*);

}  // namespace nce::cuda
