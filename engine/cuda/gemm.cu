// GEMM through the BLAS handle (cuBLAS on the GPU): the shapes become a RowMajorGemm, the
// plan (gemm_plan.h) maps it to one column-major call.
#include "engine/cuda/blas_handle.h"
#include "engine/cuda/cuda_backend.h"
#include "engine/cuda/device_tensor.h"
#include "engine/cuda/launch.h"
#include "engine/cuda/memory_kernels.h"
#include "engine/cuda/profile.h"

namespace nce::cuda {

void CudaBackend::gemm(const Tensor& a, bool ta, const Tensor& b, bool tb, Tensor& out, double alpha, double beta) {
    RowMajorGemm shape;
    shape.batch = out.rank() == 3 ? out.size(0) : 1;
    shape.m = out.size(-2);
    shape.n = out.size(-1);
    shape.k = ta ? a.size(-2) : a.size(-1);
    shape.transpose_a = ta;
    shape.transpose_b = tb;
    shape.a_batched = a.rank() == 3;
    shape.b_batched = b.rank() == 3;
    dispatch_floating(a.dtype(), "matmul", [&](auto zero) {
        using T = decltype(zero);
        const T* a_data = device_data<T>(a, "matmul");
        const T* b_data = device_data<T>(b, "matmul");
        T* out_data = device_data<T>(out, "matmul");
        if (shape.k == 0) {  // an empty sum: out = beta · out
            launch(out.numel(), ScaleBody<T>{out_data, static_cast<T>(beta)});
            return;
        }
        profile::count_gemm();
        run_gemm_plan<T>(plan_gemm(shape), static_cast<T>(alpha), b_data, a_data, static_cast<T>(beta), out_data);
    });
}

}  // namespace nce::cuda
