#include "engine/shape.h"

#include "engine/dtype.h"
#include "engine/error.h"

namespace nce {

Dtype parse_dtype(const std::string& name) {
    if (name == "float32") return Dtype::Float32;
    if (name == "float64") return Dtype::Float64;
    fail("unknown dtype '{}': use float32 or float64", name);
}

int64_t shape_numel(const Shape& shape) {
    int64_t n = 1;
    for (int64_t s : shape)
        NCE_CHECK(!__builtin_mul_overflow(n, s, &n), "tensor: shape {} has more elements than a 64-bit count holds",
                  shape_string(shape));
    return n;
}

std::string shape_string(const Shape& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

int64_t normalize_axis(int64_t axis, int64_t rank, const char* op) {
    int64_t normalized = axis < 0 ? axis + rank : axis;
    NCE_CHECK(normalized >= 0 && normalized < rank, "{}: axis {} is out of range for a tensor of rank {}",
              op, axis, rank);
    return normalized;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
    size_t rank = std::max(a.size(), b.size());
    Shape out(rank);
    for (size_t i = 0; i < rank; ++i) {
        int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
        int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
        NCE_CHECK(da == db || da == 1 || db == 1, "{}: shapes {} and {} do not broadcast (axis {}: {} vs {})",
                  op, shape_string(a), shape_string(b), i, da, db);
        out[i] = da == 1 ? db : da;
    }
    return out;
}

std::vector<int64_t> contiguous_strides(const Shape& shape) {
    std::vector<int64_t> strides(shape.size());
    int64_t stride = 1;
    for (size_t i = shape.size(); i-- > 0;) {
        strides[i] = stride;
        stride *= shape[i];
    }
    return strides;
}

}  // namespace nce
