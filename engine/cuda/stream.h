// The one stream every kernel, cuBLAS call and copy of the backend runs on (CUDA builds only;
// the host-run build has no streams). Made on first use with cudaStreamNonBlocking: it never
// waits on, or makes wait, work on the legacy default stream of other code in the process
// (a library, a Python host). Work on one stream runs in the order it was issued, so a kernel
// sees every copy and kernel issued before it, and a block the caching allocator hands out
// again is touched only after the work that used it before. The host waits on it only to read
// something back (runtime::copy to the host).
#pragma once
#include <cuda_runtime.h>

namespace nce::cuda {

cudaStream_t stream();

}  // namespace nce::cuda
