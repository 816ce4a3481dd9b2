// One warp per row: the 32 threads of a warp share a row, each lane walking the columns
// lane, lane + 32, lane + 64, ... and the lanes' partial results are combined by a fixed
// xor butterfly (offsets 16, 8, 4, 2, 1). On the GPU the butterfly is __shfl_xor_sync; in
// the host-run build the 32 lanes are a loop and the butterfly is the same additions on an
// array, so both builds add the same numbers in the same order and give the same bits.
//
// A row body (launch_rows in launch.h) is `NCE_HOST_DEVICE void operator()(int64_t row,
// const Warp& warp) const`. Inside it:
//   warp.sum<T>(partial)   partial(lane) -> T, this lane's share; every lane gets the total
//   warp.max<T>(partial)   the same with max
//   warp.each(work)        work(lane) for this lane (the host-run: for every lane in order)
// A lane may read only what it wrote itself (columns lane + 32k) between two reductions:
// the lanes of a GPU warp are not ordered, the host-run's loop is.
//
// Why the results agree between lanes: the step v_l + v_(l xor o) adds the same two numbers
// in lanes l and l xor o, and floating-point addition is commutative, so after the last step
// every lane holds the same bits.
#pragma once
#include <cstdint>

#include "engine/cuda/host_device.h"

namespace nce::cuda {

constexpr int kWarpSize = 32;

#if defined(__CUDACC__)

struct Warp {
    int lane;
    template <typename T, typename Partial>
    NCE_HOST_DEVICE T sum(const Partial& partial) const {
        T value = partial(lane);
#if defined(__CUDA_ARCH__)
        for (int offset = kWarpSize / 2; offset > 0; offset /= 2) value += __shfl_xor_sync(0xffffffffu, value, offset);
#endif
        return value;
    }
    template <typename T, typename Partial>
    NCE_HOST_DEVICE T max(const Partial& partial) const {
        T value = partial(lane);
#if defined(__CUDA_ARCH__)
        for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
            const T other = __shfl_xor_sync(0xffffffffu, value, offset);
            value = other > value ? other : value;
        }
#endif
        return value;
    }
    template <typename Work>
    NCE_HOST_DEVICE void each(const Work& work) const {
        work(lane);
    }
};

#else

struct Warp {
    template <typename T, typename Partial>
    T sum(const Partial& partial) const {
        T values[kWarpSize];
        for (int lane = 0; lane < kWarpSize; ++lane) values[lane] = partial(lane);
        for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
            T next[kWarpSize];
            for (int lane = 0; lane < kWarpSize; ++lane) next[lane] = values[lane] + values[lane ^ offset];
            for (int lane = 0; lane < kWarpSize; ++lane) values[lane] = next[lane];
        }
        return values[0];
    }
    template <typename T, typename Partial>
    T max(const Partial& partial) const {
        T values[kWarpSize];
        for (int lane = 0; lane < kWarpSize; ++lane) values[lane] = partial(lane);
        for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
            T next[kWarpSize];
            for (int lane = 0; lane < kWarpSize; ++lane) {
                const T other = values[lane ^ offset];
                next[lane] = other > values[lane] ? other : values[lane];
            }
            for (int lane = 0; lane < kWarpSize; ++lane) values[lane] = next[lane];
        }
        return values[0];
    }
    template <typename Work>
    void each(const Work& work) const {
        for (int lane = 0; lane < kWarpSize; ++lane) work(lane);
    }
};

#endif

}  // namespace nce::cuda
