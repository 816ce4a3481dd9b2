// Counter-based random fills and dropout (with relu first, and its backward): one thread
// per element, each element's draw a pure function of (seed, offset, i) (engine/random.h).
#include "engine/cpu/random_kernels.h"
#include "engine/cuda/cuda_backend.h"
#include "engine/cuda/device_tensor.h"
#include "engine/cuda/launch.h"
#include "engine/cuda/random_kernels.h"

namespace nce::cuda {
namespace {

template <bool relu_first>
void dropout_pass(const Tensor& x, uint64_t seed, uint64_t offset, double keep, Tensor& out) {
    const char* op = relu_first ? "relu_dropout" : "dropout";
    dispatch_floating(x.dtype(), op, [&](auto zero) {
        using T = decltype(zero);
        launch(x.numel(), DropoutBody<T, relu_first>{device_data<T>(x, op), device_data<T>(out, op), seed, offset,
                                                     cpu::bernoulli_threshold(keep), static_cast<T>(1 / keep)});
    });
}

}  // namespace

void CudaBackend::random(Distribution distribution, uint64_t seed, uint64_t offset, double a, double b, Tensor& out) {
    dispatch_floating(out.dtype(), "random", [&](auto zero) {
        using T = decltype(zero);
        const uint64_t threshold = distribution == Distribution::Bernoulli ? cpu::bernoulli_threshold(a) : 0;
        launch(out.numel(), RandomBody<T>{distribution, seed, offset, threshold, a, b, device_data<T>(out, "random")});
    });
}

void CudaBackend::dropout(const Tensor& x, uint64_t seed, uint64_t offset, double keep, Tensor& out) {
    dropout_pass<false>(x, seed, offset, keep, out);
}

void CudaBackend::relu_dropout(const Tensor& x, uint64_t seed, uint64_t offset, double keep, Tensor& out) {
    dropout_pass<true>(x, seed, offset, keep, out);
}

void CudaBackend::relu_dropout_backward(const Tensor& y, const Tensor& dy, double keep, Tensor& dx) {
    dispatch_floating(y.dtype(), "relu_dropout backward", [&](auto zero) {
        using T = decltype(zero);
        const char* op = "relu_dropout backward";
        launch(y.numel(), ReluDropoutBackwardBody<T>{device_data<T>(y, op), device_data<T>(dy, op),
                                                     device_data<T>(dx, op), static_cast<T>(1 / keep)});
    });
}

}  // namespace nce::cuda
