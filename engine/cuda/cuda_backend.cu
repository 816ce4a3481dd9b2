// Memory, copies between host and device, fill, and the backend's installation.
#include "engine/cuda/cuda_backend.h"

#include "engine/allocator.h"
#include "engine/cuda/device_runtime.h"
#include "engine/cuda/device_tensor.h"
#include "engine/cuda/launch.h"
#include "engine/cuda/memory_kernels.h"
#include "engine/cuda/profile.h"

namespace nce::cuda {
namespace {

// The caching allocator of engine/allocator.h over the device's two calls: a training step
// reuses the buffers of the step before instead of calling cudaMalloc again.
CachingAllocator& device_allocator() {
    static CachingAllocator* allocator = new CachingAllocator({runtime::allocate, runtime::release});  // lives until exit
    return *allocator;
}

template <typename From>
void convert_on_device(const Tensor& src, Tensor& dst) {
    const From* from = device_data<From>(src, "copy");
    dispatch_any(dst.dtype(), [&](auto to_zero) {
        using To = decltype(to_zero);
        launch(src.numel(), ConvertBody<From, To>{from, device_data<To>(dst, "copy")});
    });
}

std::vector<std::string>& row_checks() {
    static std::vector<std::string>* messages = new std::vector<std::string>();  // lives until exit
    return *messages;
}

// After a wait on the device (a read-back): an index out of range or an empty row a kernel
// recorded becomes the CPU backend's one-line error (device_errors.h).
void raise_recorded_error() {
    const DeviceErrorRecord record = runtime::take_error_record();
    std::vector<std::string> messages;
    messages.swap(row_checks());  // the checks launched so far have all run now
    if (record.op == static_cast<int64_t>(DeviceErrorOp::EmptyRow)) {
        const bool known = record.limit >= 0 && record.limit < static_cast<int64_t>(messages.size());
        NCE_CHECK(!known, "{}", fmt::format(fmt::runtime(messages[static_cast<size_t>(record.limit)]), record.index));
        NCE_CHECK(false, "a mask row {} has no nonzero entry (found on the GPU)", record.index);
    }
    static const char* const ops[] = {"", "index_select", "index_add", "gather", "scatter_add"};
    const bool known = record.op > 0 && record.op < 5;
    NCE_CHECK(record.op == 0,
              "{}: index {} is out of range [0, {}) (found on the GPU by an earlier kernel, reported at this read)",
              known ? ops[record.op] : "a kernel", record.index, record.limit);
}

}  // namespace

void* CudaBackend::allocate(std::size_t bytes) { return device_allocator().allocate(bytes); }

void CudaBackend::release(void* pointer, std::size_t bytes) { device_allocator().release(pointer, bytes); }

AllocatorStats CudaBackend::memory_stats() const { return device_allocator().stats(); }

// Between devices, values cross in the source's dtype and are converted on the host side
// (before an upload, after a download); on the device, a conversion is a kernel.
void CudaBackend::copy(const Tensor& src, Tensor& dst) {
    NCE_CHECK(src.numel() == dst.numel(), "copy: source {} and destination {} differ in size",
              shape_string(src.shape()), shape_string(dst.shape()));
    const bool from_device = src.device() == Device::CUDA, to_device = dst.device() == Device::CUDA;
    NCE_CHECK(from_device || to_device, "copy: the CUDA backend copies to or from the CUDA device only");
    if (from_device && to_device) {
        if (src.dtype() != dst.dtype()) {
            dispatch_any(src.dtype(), [&](auto from_zero) { convert_on_device<decltype(from_zero)>(src, dst); });
        } else if (src.raw_data() != dst.raw_data()) {
            profile::count_device_copy();
            runtime::copy(dst.raw_data(), src.raw_data(), src.nbytes(), runtime::CopyKind::DeviceToDevice);
        }
    } else if (to_device) {
        const Tensor host = src.to(dst.dtype());
        profile::count_upload();
        runtime::copy(dst.raw_data(), host.raw_data(), host.nbytes(), runtime::CopyKind::HostToDevice);
    } else if (src.dtype() == dst.dtype()) {
        profile::count_readback();
        runtime::copy(dst.raw_data(), src.raw_data(), src.nbytes(), runtime::CopyKind::DeviceToHost);
        raise_recorded_error();
    } else {
        Tensor staging = Tensor::empty(src.shape(), src.dtype(), Device::CPU);
        profile::count_readback();
        runtime::copy(staging.raw_data(), src.raw_data(), src.nbytes(), runtime::CopyKind::DeviceToHost);
        raise_recorded_error();
        backend_for(Device::CPU).copy(staging, dst);
    }
}

void CudaBackend::fill(Tensor& out, double value) {
    dispatch_any(out.dtype(), [&](auto zero) {
        using T = decltype(zero);
        launch(out.numel(), FillBody<T>{device_data<T>(out, "fill"), static_cast<T>(value)});
    });
}

bool install_backend() {
    const std::string reason = runtime::unavailable_reason();
    if (!reason.empty()) {
        mark_backend_unavailable(Device::CUDA, reason + " (this build has the CUDA backend; run on a machine with one)");
        return false;
    }
    static CudaBackend* backend = new CudaBackend();  // lives until exit, as the tensors it serves
    register_backend(Device::CUDA, backend);
    return true;
}

int64_t remember_row_check(const std::string& message) {
    row_checks().push_back(message);
    return static_cast<int64_t>(row_checks().size()) - 1;
}

const char* backend_build_kind() { return runtime::build_kind(); }

}  // namespace nce::cuda
