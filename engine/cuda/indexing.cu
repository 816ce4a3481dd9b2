// Row gathers and scatters (index_select / index_add by rows) and per-row picks of a class
// column (gather / scatter_add along the last axis). The indices are checked on the host
// (a copy down of n int64s), so a bad index is the CPU backend's error, not a stray read.
#include <algorithm>
#include <numeric>
#include <vector>

#include "engine/cuda/cuda_backend.h"
#include "engine/cuda/device_tensor.h"
#include "engine/cuda/indexing_kernels.h"
#include "engine/cuda/launch.h"

namespace nce::cuda {
namespace {

// The indices on the host, each checked to lie in [0, limit).
std::vector<int64_t> checked_indices(const Tensor& indices, int64_t limit, const char* op) {
    device_data<int64_t>(indices, op);  // on the device, int64
    std::vector<int64_t> host = indices.to(Device::CPU).to_indices();
    for (int64_t index : host)
        NCE_CHECK(index >= 0 && index < limit, "{}: index {} is out of range [0, {})", op, index, limit);
    return host;
}

Tensor upload(const std::vector<int64_t>& values) {
    return Tensor::from_indices(values, {static_cast<int64_t>(values.size())}).to(Device::CUDA);
}

}  // namespace

void CudaBackend::index_select_rows(const Tensor& table, const Tensor& indices, Tensor& out) {
    const int64_t rows = table.size(0), width = table.numel() / std::max<int64_t>(1, rows);
    checked_indices(indices, rows, "index_select");
    dispatch_any(table.dtype(), [&](auto zero) {
        using T = decltype(zero);
        launch(out.numel(), IndexSelectBody<T>{device_data<T>(table, "index_select"),
                                               device_data<int64_t>(indices, "index_select"),
                                               device_data<T>(out, "index_select"), width});
    });
}

// The CPU backend adds src's rows in index order; here each destination row adds its own
// sources in that same order (IndexAddBody), grouped on the host by a stable sort.
void CudaBackend::index_add_rows(const Tensor& src, const Tensor& indices, Tensor& table) {
    const int64_t rows = table.size(0), width = table.numel() / std::max<int64_t>(1, rows);
    const std::vector<int64_t> destination = checked_indices(indices, rows, "index_add");
    if (destination.empty() || width == 0) return;
    std::vector<int64_t> sources(destination.size());
    std::iota(sources.begin(), sources.end(), int64_t{0});
    std::stable_sort(sources.begin(), sources.end(),
                     [&](int64_t a, int64_t b) { return destination[a] < destination[b]; });
    std::vector<int64_t> distinct, starts;
    for (size_t k = 0; k < sources.size(); ++k) {
        if (k == 0 || destination[sources[k]] != distinct.back()) {
            distinct.push_back(destination[sources[k]]);
            starts.push_back(static_cast<int64_t>(k));
        }
    }
    starts.push_back(static_cast<int64_t>(sources.size()));
    const Tensor distinct_rows = upload(distinct), row_starts = upload(starts), grouped = upload(sources);
    dispatch_floating(src.dtype(), "index_add", [&](auto zero) {
        using T = decltype(zero);
        launch(static_cast<int64_t>(distinct.size()) * width,
               IndexAddBody<T>{device_data<T>(src, "index_add"), device_data<int64_t>(distinct_rows, "index_add"),
                               device_data<int64_t>(row_starts, "index_add"),
                               device_data<int64_t>(grouped, "index_add"), device_data<T>(table, "index_add"),
                               width});
    });
}

void CudaBackend::gather_last_axis(const Tensor& x, const Tensor& targets, Tensor& out) {
    const int64_t columns = x.size(-1);
    checked_indices(targets, columns, "gather");
    dispatch_floating(x.dtype(), "gather", [&](auto zero) {
        using T = decltype(zero);
        launch(targets.numel(), GatherLastAxisBody<T>{device_data<T>(x, "gather"), device_data<int64_t>(targets, "gather"),
                                                      device_data<T>(out, "gather"), columns});
    });
}

void CudaBackend::scatter_add_last_axis(const Tensor& values, const Tensor& targets, Tensor& dx) {
    const int64_t columns = dx.size(-1);
    checked_indices(targets, columns, "scatter_add");
    dispatch_floating(dx.dtype(), "scatter_add", [&](auto zero) {
        using T = decltype(zero);
        launch(targets.numel(),
               ScatterAddLastAxisBody<T>{device_data<T>(values, "scatter_add"),
                                         device_data<int64_t>(targets, "scatter_add"),
                                         device_data<T>(dx, "scatter_add"), columns});
    });
}

}  // namespace nce::cuda
