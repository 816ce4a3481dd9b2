// safetensors files: named tensors plus string metadata, the format PyTorch models are
// shared in (https://github.com/huggingface/safetensors describes it).
//
//   bytes 0-7    N, the header length, unsigned 64-bit little-endian
//   bytes 8..    the header: N bytes of UTF-8 JSON, padded with spaces
//                  {"__metadata__": {"key": "value", ...},
//                   "<name>": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...}
//   then         the data: each tensor's bytes, row-major, little-endian, at
//                [begin, end) counted from the first byte after the header
//
// nce reads and writes the dtypes F32 (float32), F64 (float64) and I64 (int64), and reads F16
// and BF16 widened to float32 (nn/half_precision.h: exactly, every 16-bit value is a float32).
// Every error names the file and, where one is at fault, the tensor.
#pragma once
#include <map>
#include <string>

#include "engine/tensor.h"

namespace nce::nn {

struct SafetensorsFile {
    std::map<std::string, Tensor> tensors;  // by name, sorted
    std::map<std::string, std::string> metadata;
};

// Reads and checks the whole file: the header must be valid JSON, each tensor's dtype
// supported, its byte range inside the data and exactly dtype size · element count long,
// and the ranges must cover the data without gaps or overlaps (as the Python library
// requires).
SafetensorsFile read_safetensors(const std::string& path);

// One tensor's dtype (as read: F16 and BF16 are float32) and shape, as the header gives them.
struct TensorInfo {
    Dtype dtype;
    Shape shape;
};

struct SafetensorsHeader {
    std::map<std::string, TensorInfo> tensors;  // by name, sorted
    std::map<std::string, std::string> metadata;
};

// The header alone, with every check read_safetensors makes (the byte ranges included), and
// no tensor data read: a model's shapes can be checked before anything large is allocated.
SafetensorsHeader read_safetensors_header(const std::string& path);

// Writes the tensors sorted by name, the header padded to a multiple of 8 bytes. The file
// is written beside `path` under a temporary name, flushed to disk and renamed into place
// (engine/atomic_file.h),
// so readers see either the old file or the whole new one, never a part. A writer killed
// before the rename leaves its temporary `<path>.tmp-<pid>`; the next write to `path`
// removes those whose process no longer exists, and keeps those of live processes.
void write_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace nce::nn
