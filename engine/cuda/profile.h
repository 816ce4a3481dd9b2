// What the backend asks of the device, counted: kernel launches, cuBLAS calls, copies in
// each direction. A read-back (device to host) waits for every kernel before it, so it is
// also the count of the host's waits on the GPU. Both builds count the same way, so the
// host-run build (CI) proves how many launches, uploads and read-backs an op costs, and
// tests/test_cuda_launch_counts.cpp holds the InfoNCE family and a training step to limits.
//
// NCE_CUDA_PROFILE=1 prints the counts when the process exits and, on a GPU, each kernel's
// time (CUDA events around every launch, which makes the run itself slower): one line per
// kernel body, sorted by total time.
#pragma once
#include <cstdint>
#include <string>

namespace nce::cuda::profile {

struct Counts {
    int64_t launches = 0;       // kernels of this backend
    int64_t gemms = 0;          // cuBLAS calls
    int64_t uploads = 0;        // host -> device copies
    int64_t readbacks = 0;      // device -> host copies (each one waits for the GPU)
    int64_t device_copies = 0;  // device -> device copies
};

Counts counts();  // since the start, or the last reset()
void reset();

void count_launch();
void count_gemm();
void count_upload();
void count_readback();
void count_device_copy();

// NCE_CUDA_PROFILE is set to something other than 0 or "".
bool enabled();
// Adds one launch of the kernel body named `body` taking `milliseconds` (GPU build only).
void add_kernel_time(const char* body, double milliseconds);

// "412 launches, 6 cuBLAS calls, 2 uploads, 1 read-back, 0 device copies".
std::string describe(const Counts& counts);

}  // namespace nce::cuda::profile
