// The CPU backend: Eigen for vectorised loops, OpenBLAS for GEMM, oneTBB for threads.
// Its kernels are split by family over the files of this folder.
#pragma once
#include "engine/backend.h"
#include "engine/error.h"
#include "engine/threads.h"

namespace nce::cpu {

class CpuBackend final : public Backend {
public:
    Device device() const override { return Device::CPU; }
    // Every kernel of engine/backend_kernels.def, defined split by family over this folder's files.
#define NCE_BACKEND_KERNEL(result, name, parameters) result name parameters override;
#include "engine/backend_kernels.def"
#undef NCE_BACKEND_KERNEL
};

// Calls f(T{}) with T = float or double for the tensor's dtype; throws naming `op` for int64.
template <typename F>
void dispatch_floating(Dtype dtype, const char* op, F&& f) {
    switch (dtype) {
        case Dtype::Float32: f(float{}); break;
        case Dtype::Float64: f(double{}); break;
        default: fail("{}: needs a float32 or float64 tensor, got {}", op, dtype_name(dtype));
    }
}

// Rows of this many elements or more are worth a task of their own.
constexpr int64_t kGrainElements = 16384;

// Grain in rows for row-wise loops over rows of `row_length` elements.
inline int64_t row_grain(int64_t row_length) { return std::max<int64_t>(1, kGrainElements / std::max<int64_t>(1, row_length)); }

}  // namespace nce::cpu
