// The CUDA backend: every kernel of engine/backend.h for tensors on Device::CUDA, GEMM
// through cuBLAS. README.md in this folder explains the design; in short:
//
//   * One class, CudaBackend, compiled twice from the same sources: by nvcc into the real
//     backend (nce_cuda, built when the CUDA toolkit is found), and by the C++ compiler into
//     the host-run backend (nce_cuda_host_run, always built, used by the parity tests).
//   * Three pieces differ between the two, each one small file: the launcher (launch_grid.h
//     vs launch_loop.h), the runtime's memory calls and copies (device_runtime_cuda.cu vs
//     device_runtime_host_run.cpp) and the BLAS handle (blas_cublas.cu vs blas_host_run.cpp).
//   * Each kernel's per-element body is written once, in a *_kernels.h header, as a struct
//     with an NCE_HOST_DEVICE call operator (host_device.h).
//
// ADDING A KERNEL:
//   1. Write its body in a *_kernels.h header (e.g. softmax_kernels.h): a struct holding
//      raw pointers and sizes by value, `NCE_HOST_DEVICE void operator()(int64_t i) const`
//      doing the work of element i and writing only what i owns, or for a row,
//      `operator()(int64_t r, const Warp& warp) const` (warp.h). Math through device_math.h
//      (math::exp, ...), never std::; no exceptions, no allocation in a body; a bad index is
//      recorded (device_errors.h), never thrown.
//   2. Declare it once, in engine/backend_kernels.def (Backend and both backends read it), and
//      write the member function in a .cu file of this folder (one family per file; new
//      files go in engine/cuda/meson.build's cuda_backend_sources, which both builds use):
//      check shapes and dtypes on the host (NCE_CHECK), take pointers with device_data<T>
//      (device_tensor.h; it refuses a tensor that is not on the CUDA device), and call
//      launch(count, Body{...}) or launch_rows(rows, Body{...}) (launch.h). Use no CUDA API
//      here: only the three pieces do.
//   3. Add its cases to tests/test_cuda_parity.cpp (forward and backward against the CPU
//      backend), and its launches to tests/test_cuda_launch_counts.cpp where a step uses it.
//   Check both builds: `meson test -C build cuda-parity` (host-run) and
//   `ninja -C <a -Dcuda=enabled build> engine/cuda/libnce_cuda.a` (nvcc).
#pragma once
#include <string>

#include "engine/backend.h"
#include "engine/error.h"

namespace nce::cuda {

class CudaBackend final : public Backend {
public:
    Device device() const override { return Device::CUDA; }
    // Every kernel of engine/backend_kernels.def, defined one family per .cu file of this folder.
#define NCE_BACKEND_KERNEL(result, name, parameters) result name parameters override;
#include "engine/backend_kernels.def"
#undef NCE_BACKEND_KERNEL
};

// check_rows_nonzero's messages wait on the host until the next read-back looks at the
// kernels' error record (device_errors.h): this keeps one and returns its number.
int64_t remember_row_check(const std::string& message);

// Registers the CUDA backend for Device::CUDA when a device can be used, and returns true;
// otherwise marks Device::CUDA unavailable with the reason (backend_for's error then says
// it) and returns false. The host-run build always registers. Call it once at start-up.
bool install_backend();

// "cuda" or "host-run": which build of this backend the program links.
const char* backend_build_kind();

}  // namespace nce::cuda
