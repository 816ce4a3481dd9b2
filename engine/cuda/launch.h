// The one launcher every kernel goes through: launch(n, body) calls body(i) for each i in
// [0, n), in any order and in parallel, so a body must write only what element i owns.
// On the GPU it is a grid-stride <<<>>> launch (launch_grid.h); in the host-run build a
// plain loop (launch_loop.h). Nothing else in the backend knows which.
#pragma once
#include "engine/cuda/host_device.h"

#if defined(__CUDACC__) == defined(NCE_CUDA_HOST_RUN)
#error "a CUDA backend source is compiled either by nvcc or as the host-run build (NCE_CUDA_HOST_RUN), never both or neither"
#endif

#if defined(__CUDACC__)
#include "engine/cuda/launch_grid.h"
#else
#include "engine/cuda/launch_loop.h"
#endif
