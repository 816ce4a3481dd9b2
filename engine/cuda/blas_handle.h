// Runs a GemmPlan (gemm_plan.h): one cublas<t>gemmStridedBatched call on the GPU
// (blas_cublas.cu), column-major cblas_<t>gemm per batch entry in the host-run build
// (blas_host_run.cpp). alpha and beta are host values; the pointers are device memory.
#pragma once
#include "engine/cuda/gemm_plan.h"

namespace nce::cuda {

template <typename T>
void run_gemm_plan(const GemmPlan& plan, T alpha, const T* first, const T* second, T beta, T* out);

}  // namespace nce::cuda
