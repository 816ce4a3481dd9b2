// Per-element bodies that set or move values: fill, dtype conversion, scaling by beta.
#pragma once
#include <cstdint>

#include "engine/cuda/host_device.h"

namespace nce::cuda {

template <typename T>
struct FillBody {
    T* out;
    T value;
    NCE_HOST_DEVICE void operator()(int64_t i) const { out[i] = value; }
};

// dst[i] = src[i] converted (a C++ static_cast, as the CPU backend's copy).
template <typename From, typename To>
struct ConvertBody {
    const From* src;
    To* dst;
    NCE_HOST_DEVICE void operator()(int64_t i) const { dst[i] = static_cast<To>(src[i]); }
};

// out[i] = beta · out[i], and exactly 0 when beta is 0 (out may hold garbage then): GEMM's
// C = beta · C when the inner size is 0.
template <typename T>
struct ScaleBody {
    T* out;
    T beta;
    NCE_HOST_DEVICE void operator()(int64_t i) const { out[i] = beta == T(0) ? T(0) : beta * out[i]; }
};

}  // namespace nce::cuda
