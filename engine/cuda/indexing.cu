// Row gathers and scatters (index_select / index_add by rows) and per-row picks of a class
// column (gather / scatter_add along the last axis). The indices never come to the host:
// each kernel checks the ones it reads, and one out of range is reported at the next
// read-back (device_errors.h) with the CPU backend's message.
#include <algorithm>

#include "engine/cuda/cuda_backend.h"
#include "engine/cuda/device_runtime.h"
#include "engine/cuda/device_tensor.h"
#include "engine/cuda/indexing_kernels.h"
#include "engine/cuda/launch.h"

namespace nce::cuda {

void CudaBackend::index_select_rows(const Tensor& table, const Tensor& indices, Tensor& out) {
    const int64_t rows = table.size(0), width = table.numel() / std::max<int64_t>(1, rows);
    dispatch_any(table.dtype(), [&](auto zero) {
        using T = decltype(zero);
        launch(out.numel(), IndexSelectBody<T>{device_data<T>(table, "index_select"),
                                               device_data<int64_t>(indices, "index_select"),
                                               device_data<T>(out, "index_select"), width, rows,
                                               runtime::error_record()});
    });
}

// The CPU backend adds src's rows in index order; here each destination row adds its own
// sources in that same order (IndexAddRowBody).
void CudaBackend::index_add_rows(const Tensor& src, const Tensor& indices, Tensor& table) {
    const int64_t rows = table.size(0), width = table.numel() / std::max<int64_t>(1, rows);
    if (indices.numel() == 0 || width == 0) return;
    dispatch_floating(src.dtype(), "index_add", [&](auto zero) {
        using T = decltype(zero);
        launch_rows(rows, IndexAddRowBody<T>{device_data<T>(src, "index_add"),
                                             device_data<int64_t>(indices, "index_add"),
                                             device_data<T>(table, "index_add"), indices.numel(), width, rows,
                                             runtime::error_record()});
    });
}

void CudaBackend::gather_last_axis(const Tensor& x, const Tensor& targets, Tensor& out) {
    const int64_t columns = x.size(-1);
    dispatch_floating(x.dtype(), "gather", [&](auto zero) {
        using T = decltype(zero);
        launch(targets.numel(), GatherLastAxisBody<T>{device_data<T>(x, "gather"), device_data<int64_t>(targets, "gather"),
                                                      device_data<T>(out, "gather"), columns, runtime::error_record()});
    });
}

void CudaBackend::scatter_add_last_axis(const Tensor& values, const Tensor& targets, Tensor& dx) {
    const int64_t columns = dx.size(-1);
    dispatch_floating(dx.dtype(), "scatter_add", [&](auto zero) {
        using T = decltype(zero);
        launch(targets.numel(),
               ScatterAddLastAxisBody<T>{device_data<T>(values, "scatter_add"),
                                         device_data<int64_t>(targets, "scatter_add"),
                                         device_data<T>(dx, "scatter_add"), columns, runtime::error_record()});
    });
}

}  // namespace nce::cuda
