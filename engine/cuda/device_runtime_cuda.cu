// The CUDA runtime under the backend: cudaMalloc / cudaFree, cudaMemcpy (synchronous on the
// default stream, so a copy back to the host sees every kernel before it), the device probe.
#include <cuda_runtime.h>

#include "engine/cuda/device_runtime.h"
#include "engine/cuda/launch.h"
#include "engine/error.h"

namespace nce::cuda {
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

void copy(void* dst, const void* src, std::size_t bytes, CopyKind kind) {
    if (bytes == 0) return;
    const cudaMemcpyKind direction = kind == CopyKind::HostToDevice   ? cudaMemcpyHostToDevice
                                     : kind == CopyKind::DeviceToHost ? cudaMemcpyDeviceToHost
                                                                      : cudaMemcpyDeviceToDevice;
    const cudaError_t status = cudaMemcpy(dst, src, bytes, direction);
    NCE_CHECK(status == cudaSuccess, "cuda: copying {} bytes failed: {}", bytes, cudaGetErrorString(status));
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
