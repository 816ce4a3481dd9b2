// The CUDA parity harness: the same computation on the CPU backend and on the CUDA backend
// (the real one on a GPU, the host-run build everywhere else), compared value for value.
//
// check_parity(name, f, inputs) runs f twice, once on leaves holding the inputs on the CPU
// and once on leaves holding the same values on the CUDA device, back-propagates the same
// upstream gradient through both, and requires the output and every input's gradient to
// agree within 1e-12 relative in float64 and 1e-5 in float32 (nce::allclose with that rtol
// and atol). It also requires the CUDA run's output to be on the CUDA device, so an op that
// quietly falls back to the CPU cannot pass.
#pragma once
#include <doctest/doctest.h>

#include <functional>
#include <string>
#include <vector>

#include "engine/nce.h"

namespace nce::testing {

// Parity tolerance: relative (and absolute, for values near 0).
inline double parity_tolerance(Dtype dtype) { return dtype == Dtype::Float64 ? 1e-12 : 1e-5; }

// A computation over leaves; `device` is where the leaves live, for ops that take extra
// tensors (indices, masks, targets), which must be made on that device too.
using ParityFunction = std::function<Var(const std::vector<Var>& leaves, Device device)>;

// Requires `cuda` (any device) to equal `cpu` within the dtype's tolerance; names `what`.
inline void check_close(const Tensor& cuda, const Tensor& cpu, const std::string& what) {
    INFO(what);
    REQUIRE(cuda.defined() == cpu.defined());
    if (!cpu.defined()) return;
    const Tensor host = cuda.to(Device::CPU);
    REQUIRE(shape_string(host.shape()) == shape_string(cpu.shape()));
    REQUIRE(host.dtype() == cpu.dtype());
    if (!is_floating(cpu.dtype())) {
        CHECK(host.to_indices() == cpu.to_indices());
        return;
    }
    const double tolerance = parity_tolerance(cpu.dtype());
    CHECK_MESSAGE(allclose(host, cpu, tolerance, tolerance),
                  "largest difference " << max_abs_difference(host, cpu) << " at tolerance " << tolerance);
}

// Values from a fixed seed for inputs and upstream gradients: normal(0, 1), or uniform in
// [low, high) when low < high (positive inputs for log, sqrt, pow).
inline Tensor parity_values(const Shape& shape, uint64_t seed, double low = 0, double high = 0) {
    Generator generator(seed);
    return low < high ? generator.uniform(shape, Dtype::Float64, low, high) : generator.normal(shape, Dtype::Float64);
}

// The CPU run and the CUDA run of f on `inputs` (float64 values, cast to dtype), with the
// same upstream gradient; compares the output and each input's gradient.
inline void check_parity(const std::string& name, const ParityFunction& f, const std::vector<Tensor>& inputs,
                         Dtype dtype) {
    INFO(name << " in " << std::string(dtype_name(dtype)));
    struct Run {
        Tensor output;
        std::vector<Tensor> grads;
    };
    auto run = [&](Device device) {
        std::vector<Var> leaves;
        for (const Tensor& input : inputs) leaves.push_back(Var::parameter(input.to(dtype).to(device)));
        Var output = f(leaves, device);
        REQUIRE(output.value().device() == device);
        Run result{output.value(), {}};
        if (output.requires_grad()) {
            const Tensor upstream = parity_values(output.shape(), 977).to(dtype).to(device);
            output.backward(upstream);
        }
        for (const Var& leaf : leaves) result.grads.push_back(leaf.grad());
        return result;
    };
    const Run cpu = run(Device::CPU);
    const Run cuda = run(Device::CUDA);
    check_close(cuda.output, cpu.output, name + ": forward");
    for (size_t i = 0; i < inputs.size(); ++i)
        check_close(cuda.grads[i], cpu.grads[i], name + ": gradient of input " + std::to_string(i));
}

// check_parity in float64 and in float32.
inline void check_parity_both(const std::string& name, const ParityFunction& f, const std::vector<Tensor>& inputs) {
    for (Dtype dtype : {Dtype::Float64, Dtype::Float32}) check_parity(name, f, inputs, dtype);
}

// For kernels with no Var op (tensor math only): f on the CPU copies and on the CUDA copies.
inline void check_tensor_parity(const std::string& name, const std::function<Tensor(const std::vector<Tensor>&)>& f,
                                const std::vector<Tensor>& inputs) {
    for (Dtype dtype : {Dtype::Float64, Dtype::Float32}) {
        std::vector<Tensor> cpu_inputs, cuda_inputs;
        for (const Tensor& input : inputs) {
            cpu_inputs.push_back(is_floating(input.dtype()) ? input.to(dtype) : input);
            cuda_inputs.push_back(cpu_inputs.back().to(Device::CUDA));
        }
        const Tensor cuda = f(cuda_inputs);
        REQUIRE(cuda.device() == Device::CUDA);
        check_close(cuda, f(cpu_inputs), name + " in " + dtype_name(dtype));
    }
}

}  // namespace nce::testing
