// Kernels that move values without arithmetic beyond accumulation: permute, copies along an
// axis (slice, concat, stack), row gathers and scatters (embedding lookup), per-row picks.
#include <cstring>

#include "engine/cpu/cpu_backend.h"

namespace nce::cpu {
namespace {

void check_index(int64_t index, int64_t limit, const char* op) {
    NCE_CHECK(index >= 0 && index < limit, "{}: index {} is out of range [0, {})", op, index, limit);
}

}  // namespace

void CpuBackend::permute(const Tensor& x, const std::vector<int64_t>& axes, Tensor& out) {
    size_t rank = axes.size();
    std::vector<int64_t> x_strides = contiguous_strides(x.shape());
    std::vector<int64_t> out_strides = contiguous_strides(out.shape());
    // Stride in x of each out axis.
    std::vector<int64_t> source_strides(rank);
    for (size_t i = 0; i < rank; ++i) source_strides[i] = x_strides[axes[i]];
    std::size_t element = dtype_size(x.dtype());
    const char* src = static_cast<const char*>(x.raw_data());
    char* dst = static_cast<char*>(out.raw_data());
    int64_t row_length = rank == 0 ? 1 : out.shape().back();
    int64_t rows = row_length == 0 ? 0 : out.numel() / row_length;
    int64_t last_stride = rank == 0 ? 0 : source_strides.back();
    parallel_for(rows, row_grain(row_length), [&](int64_t begin, int64_t end) {
        for (int64_t row = begin; row < end; ++row) {
            int64_t offset = 0, rest = row * row_length;
            for (size_t axis = 0; axis + 1 < rank; ++axis) {
                offset += rest / out_strides[axis] * source_strides[axis];
                rest %= out_strides[axis];
            }
            char* d = dst + row * row_length * element;
            if (last_stride == 1) {
                std::memcpy(d, src + offset * element, row_length * element);
            } else {
                for (int64_t k = 0; k < row_length; ++k)
                    std::memcpy(d + k * element, src + (offset + k * last_stride) * element, element);
            }
        }
    });
}

void CpuBackend::copy_along_axis(const Tensor& src, int64_t src_start, Tensor& dst, int64_t dst_start, int64_t axis,
                                 int64_t length, bool accumulate) {
    // Both viewed as [outer, size_along_axis, inner]; copy `length·inner` contiguous values per outer.
    int64_t outer = 1, inner = 1;
    for (int64_t i = 0; i < axis; ++i) outer *= src.shape()[i];
    for (size_t i = axis + 1; i < src.shape().size(); ++i) inner *= src.shape()[i];
    int64_t src_axis = src.shape()[axis], dst_axis = dst.shape()[axis];
    int64_t block = length * inner;
    if (!accumulate) {
        std::size_t element = dtype_size(src.dtype());
        const char* s = static_cast<const char*>(src.raw_data());
        char* d = static_cast<char*>(dst.raw_data());
        parallel_for(outer, row_grain(block), [&](int64_t begin, int64_t end) {
            for (int64_t o = begin; o < end; ++o)
                std::memcpy(d + ((o * dst_axis + dst_start) * inner) * element,
                            s + ((o * src_axis + src_start) * inner) * element, block * element);
        });
        return;
    }
    dispatch_floating(src.dtype(), "copy_along_axis", [&](auto zero) {
        using T = decltype(zero);
        const T* s = src.data<T>();
        T* d = dst.data<T>();
        parallel_for(outer, row_grain(block), [&](int64_t begin, int64_t end) {
            for (int64_t o = begin; o < end; ++o) {
                const T* from = s + (o * src_axis + src_start) * inner;
                T* to = d + (o * dst_axis + dst_start) * inner;
                for (int64_t k = 0; k < block; ++k) to[k] += from[k];
            }
        });
    });
}

void CpuBackend::index_select_rows(const Tensor& table, const Tensor& indices, Tensor& out) {
    int64_t rows = table.size(0), width = table.numel() / std::max<int64_t>(1, rows);
    const int64_t* idx = indices.data<int64_t>();
    for (int64_t i = 0; i < indices.numel(); ++i) check_index(idx[i], rows, "index_select");
    std::size_t row_bytes = width * dtype_size(table.dtype());
    const char* src = static_cast<const char*>(table.raw_data());
    char* dst = static_cast<char*>(out.raw_data());
    parallel_for(indices.numel(), row_grain(width), [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) std::memcpy(dst + i * row_bytes, src + idx[i] * row_bytes, row_bytes);
    });
}

void CpuBackend::index_add_rows(const Tensor& src, const Tensor& indices, Tensor& table) {
    // Sequential over indices: two indices may name the same row, and a fixed order keeps
    // the sums deterministic. Parallel over the row's width instead, one block of columns a
    // thread (at least 64 wide): each task walks every index, so narrow blocks would repeat
    // that walk and add too few columns at a time to vectorise.
    dispatch_floating(src.dtype(), "index_add", [&](auto zero) {
        using T = decltype(zero);
        int64_t rows = table.size(0), width = table.numel() / std::max<int64_t>(1, rows);
        const int64_t* idx = indices.data<int64_t>();
        for (int64_t i = 0; i < indices.numel(); ++i) check_index(idx[i], rows, "index_add");
        const T* s = src.data<T>();
        T* t = table.data<T>();
        const int64_t threads = std::max<int64_t>(1, num_threads());
        parallel_for(width, std::max<int64_t>(64, (width + threads - 1) / threads),
                     [&](int64_t begin, int64_t end) {
                         for (int64_t i = 0; i < indices.numel(); ++i)
                             for (int64_t c = begin; c < end; ++c) t[idx[i] * width + c] += s[i * width + c];
                     });
    });
}

void CpuBackend::gather_last_axis(const Tensor& x, const Tensor& targets, Tensor& out) {
    dispatch_floating(x.dtype(), "gather", [&](auto zero) {
        using T = decltype(zero);
        int64_t columns = x.size(-1), rows = targets.numel();
        const int64_t* t = targets.data<int64_t>();
        const T* xs = x.data<T>();
        T* o = out.data<T>();
        for (int64_t i = 0; i < rows; ++i) {
            check_index(t[i], columns, "gather");
            o[i] = xs[i * columns + t[i]];
        }
    });
}

void CpuBackend::scatter_add_last_axis(const Tensor& values, const Tensor& targets, Tensor& dx) {
    dispatch_floating(dx.dtype(), "scatter_add", [&](auto zero) {
        using T = decltype(zero);
        int64_t columns = dx.size(-1), rows = targets.numel();
        const int64_t* t = targets.data<int64_t>();
        const T* v = values.data<T>();
        T* d = dx.data<T>();
        for (int64_t i = 0; i < rows; ++i) {
            check_index(t[i], columns, "scatter_add");
            d[i * columns + t[i]] += v[i];
        }
    });
}

}  // namespace nce::cpu
