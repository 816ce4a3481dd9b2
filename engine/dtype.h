// Element types and devices a tensor can have.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace nce {

// float32 and float64 carry values that gradients flow through; int64 carries indices
// and labels (token ids, targets, qid), which are data and never get a gradient.
enum class Dtype { Float32, Float64, Int64 };

enum class Device { CPU, CUDA };

inline std::size_t dtype_size(Dtype dtype) { return dtype == Dtype::Float32 ? 4 : 8; }
inline bool is_floating(Dtype dtype) { return dtype != Dtype::Int64; }

inline const char* dtype_name(Dtype dtype) {
    switch (dtype) {
        case Dtype::Float32: return "float32";
        case Dtype::Float64: return "float64";
        case Dtype::Int64: return "int64";
    }
    return "?";
}

inline const char* device_name(Device device) { return device == Device::CPU ? "cpu" : "cuda"; }

// "float32" / "float64" -> Dtype; throws nce::Error naming the accepted values otherwise.
Dtype parse_dtype(const std::string& name);

}  // namespace nce
