// The host-run launchers: the "grid" is a loop on the calling thread, in index order.
// (One thread on purpose: a body that raced with another element's on the GPU is still
// wrong here only where it reads another element's output; see README.md.) launch_rows
// runs row r with the host-run Warp (warp.h), its 32 lanes a loop. Launches are counted
// as on the GPU (profile.h).
#pragma once
#include <cstdint>

#include "engine/cuda/profile.h"
#include "engine/cuda/warp.h"

namespace nce::cuda {

template <typename Body>
void launch(int64_t n, const Body& body) {
    if (n <= 0) return;
    profile::count_launch();
    for (int64_t i = 0; i < n; ++i) body(i);
}

template <typename Body>
void launch_rows(int64_t rows, const Body& body) {
    if (rows <= 0) return;
    profile::count_launch();
    const Warp warp;
    for (int64_t row = 0; row < rows; ++row) body(row, warp);
}

}  // namespace nce::cuda
