// One thread setting for the whole engine: oneTBB's loops and the GEMMs (split over oneTBB's
// threads by engine/blas.h, OpenBLAS itself single-threaded) share it, so they never
// oversubscribe the cores. It comes from NCE_NUM_THREADS (default: all cores) the first time
// anything asks, or from set_num_threads().
#pragma once
#include <cstdint>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

namespace nce {

int num_threads();
void set_num_threads(int threads);

// The core type OpenBLAS chose at start-up (it honours OPENBLAS_CORETYPE), e.g. "SkylakeX".
const char* blas_core_name();

// Runs body(begin, end) over [0, n) in chunks of at least `grain` on the engine's threads.
// Use it only where every output element is computed by one chunk, so results do not depend
// on how the range is split.
template <typename Body>
void parallel_for(int64_t n, int64_t grain, const Body& body) {
    if (n <= 0) return;
    if (n <= grain || num_threads() == 1) {
        body(int64_t{0}, n);
        return;
    }
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, n, grain),
                      [&](const tbb::blocked_range<int64_t>& range) { body(range.begin(), range.end()); });
}

}  // namespace nce
