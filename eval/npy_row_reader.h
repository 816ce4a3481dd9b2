// Rows of a 2-D .npy file read in pieces, so a corpus of embeddings larger than memory can be
// searched chunk by chunk: only the header is read up front, each read_rows seeks to its rows.
#pragma once
#include <cstdint>
#include <string>

#include "engine/npy.h"
#include "engine/tensor.h"

namespace nce::eval {

class NpyRowReader {
public:
    // Reads and checks the header; throws naming the file unless it is a 2-D float32/float64 .npy.
    explicit NpyRowReader(std::string path);

    int64_t rows() const { return layout_.shape[0]; }
    int64_t columns() const { return layout_.shape[1]; }
    Dtype dtype() const { return layout_.dtype; }
    const std::string& path() const { return path_; }

    // Rows [start, end) as a [end - start, columns] tensor.
    Tensor read_rows(int64_t start, int64_t end) const;

private:
    std::string path_;
    NpyLayout layout_;
};

}  // namespace nce::eval
