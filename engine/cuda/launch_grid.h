// The GPU launchers, on the backend's stream (stream.h); a failed launch throws.
//   launch(n, body)        a 1-D grid of 256-thread blocks, each thread striding over the elements
//   launch_rows(n, body)   the same grid, one warp (32 threads) per row (warp.h)
// With NCE_CUDA_PROFILE set, each launch is timed with CUDA events (profile.h).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <typeinfo>

#include "engine/cuda/profile.h"
#include "engine/cuda/stream.h"
#include "engine/cuda/warp.h"

namespace nce::cuda {

// Throws nce::Error naming the CUDA error if the last launch failed (device_runtime_cuda.cu).
void check_last_launch();

template <typename Body>
__global__ void run_elements(int64_t n, Body body) {
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) body(i);
}

// Every lane of a warp takes the same rows, so the warp's shuffles always have all 32 lanes.
template <typename Body>
__global__ void run_rows(int64_t rows, Body body) {
    const int64_t warps_in_grid = static_cast<int64_t>(gridDim.x) * (blockDim.x / kWarpSize);
    const Warp warp{static_cast<int>(threadIdx.x % kWarpSize)};
    for (int64_t row = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / kWarpSize; row < rows;
         row += warps_in_grid)
        body(row, warp);
}

constexpr int64_t kThreads = 256, kMaxBlocks = int64_t{1} << 16;

inline unsigned blocks_for(int64_t threads) {
    const int64_t blocks = (threads + kThreads - 1) / kThreads;
    return static_cast<unsigned>(blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

// Runs `start_kernel` (which launches), counting it and, when profiling, timing it.
template <typename Body, typename Start>
void timed_launch(const Start& start_kernel) {
    profile::count_launch();
    if (!profile::enabled()) {
        start_kernel();
        check_last_launch();
        return;
    }
    cudaEvent_t before, after;
    cudaEventCreate(&before);
    cudaEventCreate(&after);
    cudaEventRecord(before, stream());
    start_kernel();
    cudaEventRecord(after, stream());
    check_last_launch();
    cudaEventSynchronize(after);
    float milliseconds = 0;
    cudaEventElapsedTime(&milliseconds, before, after);
    cudaEventDestroy(before);
    cudaEventDestroy(after);
    profile::add_kernel_time(typeid(Body).name(), milliseconds);
}

template <typename Body>
void launch(int64_t n, const Body& body) {
    if (n <= 0) return;
    timed_launch<Body>([&] { run_elements<<<blocks_for(n), static_cast<unsigned>(kThreads), 0, stream()>>>(n, body); });
}

template <typename Body>
void launch_rows(int64_t rows, const Body& body) {
    if (rows <= 0) return;
    timed_launch<Body>(
        [&] { run_rows<<<blocks_for(rows * kWarpSize), static_cast<unsigned>(kThreads), 0, stream()>>>(rows, body); });
}

}  // namespace nce::cuda
