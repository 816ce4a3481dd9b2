// The kernel-body convention: a per-element (or per-row) body is a small struct whose
// call operator is NCE_HOST_DEVICE, written once in a *_kernels.h header. nvcc compiles it
// for the GPU (and the host); the host-run build is plain C++, where the macro is empty.
//
// Which build is which: nvcc defines __CUDACC__; the host-run library is compiled by the
// C++ compiler with NCE_CUDA_HOST_RUN=1. Exactly one of the two holds in a CUDA backend
// source, and the launcher, the runtime and the BLAS handle are chosen by it.
#pragma once
#include <cstdint>

#if defined(__CUDACC__)
#define NCE_HOST_DEVICE __host__ __device__
#else
#define NCE_HOST_DEVICE
#endif

namespace nce::cuda {

// Binary ops, permute and the like carry their shapes and strides by value into the
// kernel, in fixed arrays of this many axes; a tensor of higher rank is an error.
constexpr int kMaxRank = 8;

}  // namespace nce::cuda
