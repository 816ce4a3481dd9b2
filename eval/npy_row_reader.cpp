#include "eval/npy_row_reader.h"

#include <cerrno>
#include <cstring>
#include <fstream>

namespace nce::eval {

NpyRowReader::NpyRowReader(std::string path) : path_(std::move(path)), layout_(read_npy_layout(path_)) {
    NCE_CHECK(layout_.shape.size() == 2, "NpyRowReader: '{}' has shape {}; a corpus of embeddings must be 2-D [N, D]",
              path_, shape_string(layout_.shape));
    NCE_CHECK(layout_.dtype != Dtype::Int64,
              "NpyRowReader: '{}' holds int64; a corpus of embeddings must be float32 or float64", path_);
}

Tensor NpyRowReader::read_rows(int64_t start, int64_t end) const {
    NCE_CHECK(0 <= start && start <= end && end <= rows(),
              "NpyRowReader: '{}': rows [{}, {}) are outside its {} rows", path_, start, end, rows());
    Tensor rows_read = Tensor::empty({end - start, columns()}, dtype());
    std::ifstream file(path_, std::ios::binary);
    NCE_CHECK(file.is_open(), "NpyRowReader: cannot open '{}': {}", path_, std::strerror(errno));
    uint64_t row_bytes = static_cast<uint64_t>(columns()) * dtype_size(dtype());
    file.seekg(static_cast<std::streamoff>(layout_.data_offset + static_cast<uint64_t>(start) * row_bytes));
    NCE_CHECK(file.read(static_cast<char*>(rows_read.raw_data()), static_cast<std::streamsize>(rows_read.nbytes())),
              "NpyRowReader: '{}': reading rows [{}, {}) failed (was the file changed while reading?)", path_, start,
              end);
    return rows_read;
}

}  // namespace nce::eval
