// --device cpu|cuda: the name checked, and the device's backend found before any work.
#include "retrieval/settings/device_name.h"

#include "engine/backend.h"
#include "engine/error.h"

namespace nce::retrieval {

Device parse_device_name(const std::string& name) {
    if (name == "cpu") return Device::CPU;
    if (name == "cuda") return Device::CUDA;
    fail("--device must be cpu or cuda, got '{}'", name);
}

Device require_device(const std::string& name) {
    const Device device = parse_device_name(name);
    try {
        backend_for(device);
    } catch (const Error& error) {
        fail("--device {}: {}; run with --device cpu", name, error.what());
    }
    return device;
}

}  // namespace nce::retrieval
