// Reductions along one axis, and sum-to-shape (the backward of broadcasting).
//
// Determinism: every output element is accumulated by one thread in a fixed order, and a
// reduction to a single value sums fixed-size blocks in parallel and then adds the block
// sums in order, so results never depend on the thread count.
#include <Eigen/Core>
#include <cmath>

#include "engine/cpu/cpu_backend.h"
#include "engine/sum_to_by_axes.h"

namespace nce::cpu {
namespace {

constexpr int64_t kBlock = 8192;

template <typename T>
T reduce_contiguous(ReduceOp op, const T* x, int64_t n, int64_t* argmax) {
    if (op == ReduceOp::Sum) {
        T total = 0;
        for (int64_t k = 0; k < n; ++k) total += x[k];
        return total;
    }
    // The first maximum wins ties; a NaN wins over any number, so NaN propagates.
    T best = x[0];
    int64_t best_index = 0;
    for (int64_t k = 1; k < n; ++k) {
        if (x[k] > best || (std::isnan(x[k]) && !std::isnan(best))) {
            best = x[k];
            best_index = k;
        }
    }
    if (argmax) *argmax = best_index;
    return best;
}

}  // namespace

void CpuBackend::reduce(ReduceOp op, const Tensor& x, int64_t axis, Tensor& out, Tensor* indices) {
    dispatch_floating(x.dtype(), "reduce", [&](auto zero) {
        using T = decltype(zero);
        const Shape& shape = x.shape();
        int64_t outer = 1, inner = 1, n = shape.empty() ? 1 : shape[axis];
        for (int64_t i = 0; i < axis; ++i) outer *= shape[i];
        for (size_t i = axis + 1; i < shape.size(); ++i) inner *= shape[i];
        const T* x_data = x.data<T>();
        T* out_data = out.data<T>();
        int64_t* index_data = indices ? indices->data<int64_t>() : nullptr;
        NCE_CHECK(n > 0 || op == ReduceOp::Sum, "max: cannot take the max over an empty axis");

        if (inner == 1 && outer == 1 && op == ReduceOp::Sum && n > kBlock) {
            // One long sum: fixed blocks in parallel, block sums added in order.
            int64_t blocks = (n + kBlock - 1) / kBlock;
            std::vector<T> partial(static_cast<size_t>(blocks));
            parallel_for(blocks, 1, [&](int64_t begin, int64_t end) {
                for (int64_t b = begin; b < end; ++b)
                    partial[b] = reduce_contiguous(op, x_data + b * kBlock, std::min(kBlock, n - b * kBlock), nullptr);
            });
            T total = 0;
            for (T p : partial) total += p;
            out_data[0] = total;
            return;
        }
        if (inner == 1) {
            parallel_for(outer, row_grain(n), [&](int64_t begin, int64_t end) {
                for (int64_t o = begin; o < end; ++o)
                    out_data[o] = reduce_contiguous(op, x_data + o * n, n, index_data ? index_data + o : nullptr);
            });
            return;
        }
        // Strided: for each outer index, sweep the n slices of length `inner`, accumulating
        // elementwise. Split over outer and over chunks of inner: a few chunks per thread,
        // each wide enough that every slice is one long contiguous read.
        int64_t inner_chunk = std::max<int64_t>(64, (inner + 4 * num_threads() - 1) / (4 * num_threads()));
        int64_t chunks = (inner + inner_chunk - 1) / inner_chunk;
        parallel_for(outer * chunks, 1, [&](int64_t begin, int64_t end) {
            for (int64_t task = begin; task < end; ++task) {
                int64_t o = task / chunks, c0 = (task % chunks) * inner_chunk, c1 = std::min(inner, c0 + inner_chunk);
                T* dst = out_data + o * inner;
                const T* src = x_data + o * n * inner;
                if (op == ReduceOp::Sum) {  // in a local array, slice by slice in order
                    using Slice = Eigen::Array<T, Eigen::Dynamic, 1>;
                    Slice total = Slice::Zero(c1 - c0);
                    for (int64_t k = 0; k < n; ++k) total += Eigen::Map<const Slice>(src + k * inner + c0, c1 - c0);
                    Eigen::Map<Slice>(dst + c0, c1 - c0) = total;
                } else {
                    for (int64_t c = c0; c < c1; ++c) {
                        T best = src[c];
                        int64_t best_index = 0;
                        for (int64_t k = 1; k < n; ++k) {
                            T v = src[k * inner + c];
                            if (v > best || (std::isnan(v) && !std::isnan(best))) {
                                best = v;
                                best_index = k;
                            }
                        }
                        dst[c] = best;
                        if (index_data) index_data[o * inner + c] = best_index;
                    }
                }
            }
        });
    });
}

void CpuBackend::sum_to(const Tensor& x, Tensor& out) { sum_to_by_axes(*this, x, out); }

}  // namespace nce::cpu
