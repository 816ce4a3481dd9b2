// One thread setting for the whole engine: oneTBB's loops and the GEMMs (split over oneTBB's
// threads by engine/blas.h, OpenBLAS itself single-threaded) share it, so they never
// oversubscribe the cores. It comes from NCE_NUM_THREADS (default: all cores) the first time
// anything asks, or from set_num_threads().
#pragma once
#include <cstdint>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>

namespace nce {

int num_threads();
void set_num_threads(int threads);

// The core type OpenBLAS chose at start-up (it honours OPENBLAS_CORETYPE), e.g. "SkylakeX".
const char* blas_core_name();

// Runs body(begin, end) over [0, n) in chunks on the engine's threads. Use it only where
// every output element is computed by one chunk. The chunks are the same on every call: [0, n)
// halved until each piece holds at most `grain` (oneTBB's simple_partitioner), whichever
// thread takes which, so an element's bits never depend on where a chunk happened to end (a
// vectorised loop rounds its scalar tail differently: gelu's backward did, under the adaptive
// split). On one thread, or for n <= grain, one chunk.
template <typename Body>
void parallel_for(int64_t n, int64_t grain, const Body& body) {
    if (n <= 0) return;
    if (n <= grain || num_threads() == 1) {
        body(int64_t{0}, n);
        return;
    }
    tbb::parallel_for(
        tbb::blocked_range<int64_t>(0, n, grain),
        [&](const tbb::blocked_range<int64_t>& range) { body(range.begin(), range.end()); }, tbb::simple_partitioner());
}

}  // namespace nce
