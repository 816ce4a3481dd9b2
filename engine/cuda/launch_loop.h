// The host-run launcher: the "grid" is a loop on the calling thread, in index order.
// (One thread on purpose: a body that raced with another element's on the GPU is still
// wrong here only where it reads another element's output; see README.md.)
#pragma once
#include <cstdint>

namespace nce::cuda {

template <typename Body>
void launch(int64_t n, const Body& body) {
    for (int64_t i = 0; i < n; ++i) body(i);
}

}  // namespace nce::cuda
