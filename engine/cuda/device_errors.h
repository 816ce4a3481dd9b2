// Errors a kernel finds (an index out of range) cannot be thrown where they happen: the
// kernel skips the bad element and records it here, in memory the host reads without a
// copy (pinned and mapped on the GPU; a plain variable in the host-run build). The host
// looks at the record after each of its waits on the GPU, every read-back (cuda_backend.cu),
// and throws the one-line error the CPU backend gives at once. So a bad index costs no
// extra wait on the GPU, and is reported at the next read (a training step's loss at latest).
#pragma once
#include <cstdint>

#include "engine/cuda/host_device.h"

namespace nce::cuda {

enum class DeviceErrorOp : int64_t {
    None = 0, IndexSelect, IndexAdd, Gather, ScatterAdd,
    EmptyRow,  // check_rows_nonzero: index is the row, limit the host's number for the message
};

struct DeviceErrorRecord {
    int64_t op;     // DeviceErrorOp; None: no error
    int64_t index;  // the first bad index recorded
    int64_t limit;  // it had to lie in [0, limit)
};

// Records the bad index unless an error is recorded already (the first one claims the record).
NCE_HOST_DEVICE inline void record_bad_index(DeviceErrorRecord* record, DeviceErrorOp op, int64_t index,
                                             int64_t limit) {
#if defined(__CUDA_ARCH__)
    auto* claim = reinterpret_cast<unsigned long long*>(&record->op);
    if (atomicCAS(claim, 0ull, static_cast<unsigned long long>(op)) != 0ull) return;
#else
    if (record->op != 0) return;
    record->op = static_cast<int64_t>(op);
#endif
    record->index = index;
    record->limit = limit;
}

NCE_HOST_DEVICE inline bool index_in_range(int64_t index, int64_t limit) { return index >= 0 && index < limit; }

}  // namespace nce::cuda
