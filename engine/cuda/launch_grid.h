// The GPU launcher: a 1-D grid of 256-thread blocks, each thread striding over the elements
// (so any n fits in a bounded grid), on the default stream; a failed launch throws.
#pragma once
#include <cstdint>

namespace nce::cuda {

// Throws nce::Error naming the CUDA error if the last launch failed (device_runtime_cuda.cu).
void check_last_launch();

template <typename Body>
__global__ void run_elements(int64_t n, Body body) {
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) body(i);
}

template <typename Body>
void launch(int64_t n, const Body& body) {
    if (n <= 0) return;
    constexpr int64_t kThreads = 256, kMaxBlocks = int64_t{1} << 16;
    const int64_t blocks = (n + kThreads - 1) / kThreads < kMaxBlocks ? (n + kThreads - 1) / kThreads : kMaxBlocks;
    run_elements<<<static_cast<unsigned>(blocks), static_cast<unsigned>(kThreads)>>>(n, body);
    check_last_launch();
}

}  // namespace nce::cuda
