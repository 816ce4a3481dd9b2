// A shape is the list of a tensor's sizes, outermost first (row-major).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace nce {

using Shape = std::vector<int64_t>;

// The number of elements. A product past int64 is an error naming the shape: sizes come from
// files and flags, and a wrapped count would make a tiny buffer for a huge tensor.
int64_t shape_numel(const Shape& shape);

// "[2, 3, 4]"
std::string shape_string(const Shape& shape);

// Normalises a possibly negative axis (-1 = last) against a rank; throws naming `op`.
int64_t normalize_axis(int64_t axis, int64_t rank, const char* op);

// NumPy broadcasting: align trailing axes; each pair must be equal or one of them 1.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

// Row-major strides in elements.
std::vector<int64_t> contiguous_strides(const Shape& shape);

}  // namespace nce
