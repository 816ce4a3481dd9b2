// NumPy .npy files: read and write format versions 1.0 and 2.0 (version 3.0 on read as
// well), little-endian, C order, with dtype float32 ('<f4'), float64 ('<f8') or int64
// ('<i8'). Errors name the file and what is wrong with it.
#pragma once
#include <cstdint>
#include <string>

#include "engine/tensor.h"

namespace nce {

Tensor read_npy(const std::string& path);

// Where a .npy file's data lies, with the header checked as read_npy checks it (and the file
// size matching the shape): for reading a file too large for memory in pieces.
struct NpyLayout {
    Dtype dtype = Dtype::Float32;
    Shape shape;
    uint64_t data_offset = 0;  // bytes from the start of the file to the first element
};
NpyLayout read_npy_layout(const std::string& path);

// Writes the file whole or not at all (engine/atomic_file.h), so a failure never leaves half
// a file. Uses format 1.0 unless the header needs 2.0.
void write_npy(const std::string& path, const Tensor& tensor);

}  // namespace nce
