// The device's runtime as the backend needs it: memory's two calls, copies, and whether a
// device is there at all. device_runtime_cuda.cu implements it over the CUDA runtime;
// device_runtime_host_run.cpp over host memory (the "device" is this process's heap).
#pragma once
#include <cstddef>
#include <string>

#include "engine/cuda/device_errors.h"

namespace nce::cuda::runtime {

using cuda::DeviceErrorRecord;

// Fresh device memory (cudaMalloc; never managed memory), nullptr when out of memory.
void* allocate(std::size_t bytes);
void release(void* pointer);

enum class CopyKind { HostToDevice, DeviceToHost, DeviceToDevice };
// Copies `bytes` in the order of the backend's work: every kernel launched before has written
// them, every kernel launched after sees them. To the host it returns when they are there; from
// the host, the source may be reused as soon as it returns.
void copy(void* dst, const void* src, std::size_t bytes, CopyKind kind);

// The kernels' error record (device_errors.h), as a pointer kernels write through, and the
// host's read of it, which clears it. The record is read only after a wait on the device.
DeviceErrorRecord* error_record();
DeviceErrorRecord take_error_record();

// Empty when a device can be used; otherwise one line saying why not.
std::string unavailable_reason();

// "cuda" for the real backend, "host-run" for the host-run build (named in test output).
const char* build_kind();

}  // namespace nce::cuda::runtime
