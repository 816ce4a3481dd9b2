// The host-run runtime: device memory is aligned host memory, copies are memcpy, and the
// "device" is always there. (One of the three pieces that differ from the real build.)
#include <cstring>
#include <new>

#include "engine/cuda/device_runtime.h"

namespace nce::cuda::runtime {

// cudaMalloc aligns to 256 bytes; so does this, so no alignment assumption passes here
// that would fail there.
constexpr std::align_val_t kAlignment{256};

void* allocate(std::size_t bytes) { return ::operator new(bytes, kAlignment, std::nothrow); }

void release(void* pointer) { ::operator delete(pointer, kAlignment); }

void copy(void* dst, const void* src, std::size_t bytes, CopyKind) {
    if (bytes > 0) std::memcpy(dst, src, bytes);
}

namespace {
DeviceErrorRecord record{};
}  // namespace

DeviceErrorRecord* error_record() { return &record; }

DeviceErrorRecord take_error_record() {
    const DeviceErrorRecord taken = record;
    record = DeviceErrorRecord{};
    return taken;
}

std::string unavailable_reason() { return {}; }

const char* build_kind() { return "host-run"; }

}  // namespace nce::cuda::runtime
