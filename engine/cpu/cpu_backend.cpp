// Memory, copies, fills and random numbers on the CPU, and the backend registry.
#include "engine/cpu/cpu_backend.h"

#include <Eigen/Core>
#include <array>
#include <cmath>
#include <cstring>

#include "engine/allocator.h"
#include "engine/cpu/random_kernels.h"
#include "engine/random.h"

namespace nce {
namespace {

std::array<Backend*, 2>& registry() {
    static cpu::CpuBackend cpu_backend;
    static std::array<Backend*, 2> backends{&cpu_backend, nullptr};
    return backends;
}

// Why a device has no backend, when something said so (mark_backend_unavailable).
std::array<std::string, 2>& unavailable_reasons() {
    static std::array<std::string, 2> reasons;
    return reasons;
}

}  // namespace

Backend& backend_for(Device device) {
    Backend* backend = registry()[static_cast<size_t>(device)];
    if (backend == nullptr) {
        const std::string& reason = unavailable_reasons()[static_cast<size_t>(device)];
        NCE_CHECK(reason.empty(), "no {} device: {}", device_name(device), reason);
        fail("no {} backend in this build: rebuild with -Dcuda=enabled on a machine with the CUDA toolkit",
             device_name(device));
    }
    return *backend;
}

void register_backend(Device device, Backend* backend) { registry()[static_cast<size_t>(device)] = backend; }

void mark_backend_unavailable(Device device, std::string reason) {
    unavailable_reasons()[static_cast<size_t>(device)] = std::move(reason);
}

namespace cpu {

void* CpuBackend::allocate(std::size_t bytes) { return CachingAllocator::host().allocate(bytes); }

void CpuBackend::release(void* pointer, std::size_t bytes) { CachingAllocator::host().release(pointer, bytes); }

AllocatorStats CpuBackend::memory_stats() const { return CachingAllocator::host().stats(); }

namespace {

template <typename From, typename To>
void convert(const From* src, To* dst, int64_t n) {
    parallel_for(n, kGrainElements, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) dst[i] = static_cast<To>(src[i]);
    });
}

template <typename To>
void convert_from(const Tensor& src, To* dst) {
    int64_t n = src.numel();
    switch (src.dtype()) {
        case Dtype::Float32: convert(src.data<float>(), dst, n); break;
        case Dtype::Float64: convert(src.data<double>(), dst, n); break;
        case Dtype::Int64: convert(src.data<int64_t>(), dst, n); break;
    }
}

}  // namespace

void CpuBackend::copy(const Tensor& src, Tensor& dst) {
    NCE_CHECK(src.numel() == dst.numel(), "copy: source {} and destination {} differ in size",
              shape_string(src.shape()), shape_string(dst.shape()));
    NCE_CHECK(src.device() == Device::CPU && dst.device() == Device::CPU, "copy: the CPU backend copies host memory only");
    if (src.dtype() == dst.dtype()) {
        if (src.raw_data() != dst.raw_data() && src.nbytes() > 0) std::memcpy(dst.raw_data(), src.raw_data(), src.nbytes());
        return;
    }
    switch (dst.dtype()) {
        case Dtype::Float32: convert_from(src, dst.data<float>()); break;
        case Dtype::Float64: convert_from(src, dst.data<double>()); break;
        case Dtype::Int64: convert_from(src, dst.data<int64_t>()); break;
    }
}

void CpuBackend::fill(Tensor& out, double value) {
    auto fill_with = [&](auto* data) {
        using T = std::remove_pointer_t<decltype(data)>;
        T v = static_cast<T>(value);
        parallel_for(out.numel(), kGrainElements, [&](int64_t begin, int64_t end) { std::fill(data + begin, data + end, v); });
    };
    switch (out.dtype()) {
        case Dtype::Float32: fill_with(out.data<float>()); break;
        case Dtype::Float64: fill_with(out.data<double>()); break;
        case Dtype::Int64: fill_with(out.data<int64_t>()); break;
    }
}

void CpuBackend::random(Distribution distribution, uint64_t seed, uint64_t offset, double a, double b, Tensor& out) {
    dispatch_floating(out.dtype(), "random", [&](auto zero) {
        using T = decltype(zero);
        T* data = out.data<T>();
        if (distribution == Distribution::Bernoulli) {
            const uint64_t threshold = bernoulli_threshold(a);
            parallel_for(out.numel(), 4096, [&](int64_t begin, int64_t end) {
                bernoulli_elements<T>(data + begin, end - begin, static_cast<uint64_t>(begin), seed, offset, threshold);
            });
            return;
        }
        parallel_for(out.numel(), 4096, [&](int64_t begin, int64_t end) {
            for (int64_t i = begin; i < end; ++i) {
                uint64_t counter = offset + static_cast<uint64_t>(i);
                double value = 0;
                switch (distribution) {
                    case Distribution::Uniform: value = a + (b - a) * random_bits::uniform(seed, counter); break;
                    case Distribution::Normal: value = a + b * random_bits::normal(seed, counter); break;
                    case Distribution::Bernoulli: value = random_bits::uniform(seed, counter) < a ? 1.0 : 0.0; break;
                }
                data[i] = static_cast<T>(value);
            }
        });
    });
}

namespace {

// Dropout, or relu then dropout, over x in chunks on the engine's threads (random_kernels.h).
template <bool relu_first>
void dropout_pass(const Tensor& x, uint64_t seed, uint64_t offset, double keep, Tensor& out) {
    dispatch_floating(x.dtype(), relu_first ? "relu_dropout" : "dropout", [&](auto zero) {
        using T = decltype(zero);
        const T* in = x.data<T>();
        T* data = out.data<T>();
        const uint64_t threshold = bernoulli_threshold(keep);
        const T scale = static_cast<T>(1 / keep);
        parallel_for(x.numel(), 4096, [&](int64_t begin, int64_t end) {
            const uint64_t first = static_cast<uint64_t>(begin);
            if constexpr (relu_first)
                relu_dropout_elements<T>(in + begin, data + begin, end - begin, first, seed, offset, threshold, scale);
            else
                dropout_elements<T>(in + begin, data + begin, end - begin, first, seed, offset, threshold, scale);
        });
    });
}

}  // namespace

void CpuBackend::dropout(const Tensor& x, uint64_t seed, uint64_t offset, double keep, Tensor& out) {
    dropout_pass<false>(x, seed, offset, keep, out);
}

void CpuBackend::relu_dropout(const Tensor& x, uint64_t seed, uint64_t offset, double keep, Tensor& out) {
    dropout_pass<true>(x, seed, offset, keep, out);
}

void CpuBackend::relu_dropout_backward(const Tensor& y, const Tensor& dy, double keep, Tensor& dx) {
    dispatch_floating(y.dtype(), "relu_dropout backward", [&](auto zero) {
        using T = decltype(zero);
        using Array = Eigen::Array<T, Eigen::Dynamic, 1>;
        const T* y_data = y.data<T>();
        const T* dy_data = dy.data<T>();
        T* dx_data = dx.data<T>();
        const T scale = static_cast<T>(1 / keep);
        parallel_for(y.numel(), 4096, [&](int64_t begin, int64_t end) {
            Eigen::Map<const Array> kept(y_data + begin, end - begin), upstream(dy_data + begin, end - begin);
            Eigen::Map<Array>(dx_data + begin, end - begin) = (kept != T(0)).select(upstream * scale, T(0));
        });
    });
}

}  // namespace cpu
}  // namespace nce
