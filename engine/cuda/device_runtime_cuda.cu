// The CUDA runtime under the backend: its stream (stream.h), cudaMalloc / cudaFree, copies
// issued on the stream (a copy back to the host then waits for it, so it sees every kernel
// before it), the device probe.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <mutex>

#include "engine/cuda/device_runtime.h"
#include "engine/cuda/launch.h"
#include "engine/cuda/stream.h"
#include "engine/error.h"

namespace nce::cuda {

cudaStream_t stream() {
    static cudaStream_t made = [] {
        cudaStream_t s = nullptr;
        const cudaError_t status = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
        NCE_CHECK(status == cudaSuccess, "cuda: cannot create the backend's stream: {}", cudaGetErrorString(status));
        return s;
    }();
    return made;
}

namespace runtime {

void* allocate(std::size_t bytes) {
    void* pointer = nullptr;
    if (cudaMalloc(&pointer, bytes) != cudaSuccess) {
        cudaGetLastError();  // clear the out-of-memory error: the caller retries or reports it
        return nullptr;
    }
    return pointer;
}

void release(void* pointer) { cudaFree(pointer); }  // errors at process exit are ignored

namespace {

// Uploads go through pinned staging buffers: from pageable memory cudaMemcpyAsync waits for
// the stream to drain before it starts (the host would stall on every batch's ids behind
// the previous step's kernels), from pinned memory it only queues. The host copies the bytes
// into the next of kStagingSlots buffers and queues the upload from there; an event recorded
// after it says when the buffer may be written again, which a slot's next use (kStagingSlots
// uploads later) waits for. Uploads above kLargestStaged (a model's weights, once) go from
// pageable memory as they are.
constexpr int kStagingSlots = 8;
constexpr std::size_t kLargestStaged = std::size_t{64} << 20;

struct StagingSlot {
    void* host = nullptr;
    std::size_t bytes = 0;
    cudaEvent_t written_out = nullptr;  // recorded after the upload that last read `host`
};

struct Staging {
    std::mutex mutex;
    StagingSlot slots[kStagingSlots];
    int next = 0;
};

Staging& staging() {
    static Staging* made = new Staging;  // lives until exit: pinned memory is freed with the process
    return *made;
}

void check(cudaError_t status, const char* what, std::size_t bytes) {
    NCE_CHECK(status == cudaSuccess, "cuda: {} {} bytes failed: {}", what, bytes, cudaGetErrorString(status));
}

void staged_upload(void* dst, const void* src, std::size_t bytes) {
    Staging& all = staging();
    std::lock_guard lock(all.mutex);
    StagingSlot& slot = all.slots[all.next];
    all.next = (all.next + 1) % kStagingSlots;
    if (slot.written_out != nullptr) check(cudaEventSynchronize(slot.written_out), "waiting to reuse staging for", bytes);
    else check(cudaEventCreateWithFlags(&slot.written_out, cudaEventDisableTiming), "making an event for", bytes);
    if (slot.bytes < bytes) {
        if (slot.host != nullptr) cudaFreeHost(slot.host);
        slot.host = nullptr;
        slot.bytes = 0;
        const std::size_t grown = std::max<std::size_t>(bytes, std::size_t{1} << 16);
        check(cudaHostAlloc(&slot.host, grown, cudaHostAllocDefault), "pinning staging for", grown);
        slot.bytes = grown;
    }
    std::memcpy(slot.host, src, bytes);
    check(cudaMemcpyAsync(dst, slot.host, bytes, cudaMemcpyHostToDevice, stream()), "uploading", bytes);
    check(cudaEventRecord(slot.written_out, stream()), "recording the upload of", bytes);
}

}  // namespace

void copy(void* dst, const void* src, std::size_t bytes, CopyKind kind) {
    if (bytes == 0) return;
    // Every copy is issued on the stream, in order with the kernels.
    if (kind == CopyKind::HostToDevice && bytes <= kLargestStaged) return staged_upload(dst, src, bytes);
    const cudaMemcpyKind direction = kind == CopyKind::HostToDevice   ? cudaMemcpyHostToDevice
                                     : kind == CopyKind::DeviceToHost ? cudaMemcpyDeviceToHost
                                                                      : cudaMemcpyDeviceToDevice;
    // A large upload from pageable memory returns once the runtime has staged it; a copy to
    // the host waits for the stream, so the bytes are there when this returns.
    check(cudaMemcpyAsync(dst, src, bytes, direction, stream()), "copying", bytes);
    if (kind == CopyKind::DeviceToHost) check(cudaStreamSynchronize(stream()), "waiting for a copy of", bytes);
}

namespace {

// The record in pinned host memory mapped into the device's address space: kernels write it,
// the host reads it after a wait, no copy either way. Made on first use.
struct MappedRecord {
    DeviceErrorRecord* host = nullptr;
    DeviceErrorRecord* device = nullptr;
};

MappedRecord& mapped_record() {
    static MappedRecord record = [] {
        MappedRecord made;
        void* host = nullptr;
        cudaError_t status = cudaHostAlloc(&host, sizeof(DeviceErrorRecord), cudaHostAllocMapped);
        NCE_CHECK(status == cudaSuccess, "cuda: cannot allocate the kernels' error record: {}", cudaGetErrorString(status));
        made.host = static_cast<DeviceErrorRecord*>(host);
        *made.host = DeviceErrorRecord{};
        void* device = nullptr;
        status = cudaHostGetDevicePointer(&device, host, 0);
        NCE_CHECK(status == cudaSuccess, "cuda: cannot map the kernels' error record: {}", cudaGetErrorString(status));
        made.device = static_cast<DeviceErrorRecord*>(device);
        return made;
    }();
    return record;
}

}  // namespace

DeviceErrorRecord* error_record() { return mapped_record().device; }

DeviceErrorRecord take_error_record() {
    volatile DeviceErrorRecord* host = mapped_record().host;
    DeviceErrorRecord taken{host->op, host->index, host->limit};
    if (taken.op != 0) {
        host->op = 0;
        host->index = 0;
        host->limit = 0;
    }
    return taken;
}

std::string unavailable_reason() {
    int devices = 0;
    const cudaError_t status = cudaGetDeviceCount(&devices);
    if (status != cudaSuccess) return fmt::format("the CUDA runtime finds no GPU ({})", cudaGetErrorString(status));
    if (devices == 0) return "the CUDA runtime finds no GPU on this machine";
    return {};
}

const char* build_kind() { return "cuda"; }

}  // namespace runtime

void check_last_launch() {
    const cudaError_t status = cudaGetLastError();
    NCE_CHECK(status == cudaSuccess, "cuda: a kernel launch failed: {}", cudaGetErrorString(status));
}

}  // namespace nce::cuda
