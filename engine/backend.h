// The backend interface: every kernel an op needs, one virtual function each, listed once in
// engine/backend_kernels.def with what each computes. Ops never touch device memory
// themselves; they call tensor_math.h, which calls the backend of the tensors' device. The
// CPU backend (engine/cpu/) implements it over Eigen, OpenBLAS and oneTBB; the CUDA backend
// (engine/cuda/) implements the same list, and no caller changes.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/allocator.h"
#include "engine/tensor.h"

namespace nce {

enum class UnaryOp {
    Neg, Exp, Log, Sqrt, Tanh, Sigmoid, Relu, Abs, Square, Reciprocal,
    Step,                 // 1 where x > 0, else 0 (the derivative of relu)
    GeluErf,              // x Phi(x)
    GeluTanh,             // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
    GeluErfDerivative,    // d/dx of GeluErf
    GeluTanhDerivative,   // d/dx of GeluTanh
};

enum class BinaryOp { Add, Sub, Mul, Div, Pow, Maximum, Minimum, Greater /* 1 if a > b else 0 */ };

enum class ReduceOp { Sum, Max };

// Multi-head self-attention on packed projections (engine/ops/packed_attention.cpp has the
// math). qkv [B, T, 3D] holds q, k and v side by side; head h is columns h·dh .. (h+1)·dh of
// each part (dh = D / heads).
struct PackedAttention {
    int64_t heads = 1;
    double keep = 1;                  // 1 - the dropout on the probabilities
    uint64_t seed = 0, offset = 0;    // dropout: P [B, H, T, T] is one Bernoulli fill at offset
};

// One Adam / AdamW update's constants (nn/adam_update.h derives them; each is cast to the
// parameter's dtype before use, as the tensor-level rule does).
struct AdamStep {
    bool l2_in_gradient = false;  // Adam: g + weight_decay · p
    bool decoupled = false;       // AdamW: p · shrink
    bool amsgrad = false;
    double weight_decay = 0, shrink = 1, beta1 = 0, one_minus_beta1 = 0, beta2 = 0, one_minus_beta2 = 0,
           sqrt_bias_correction2 = 1, eps = 0, step_size = 0;
};

enum class Distribution { Uniform /* [a, b) */, Normal /* mean a, std b */, Bernoulli /* 1 with probability a */ };

class Backend {
public:
    virtual ~Backend() = default;
    virtual Device device() const = 0;

#define NCE_BACKEND_KERNEL(result, name, parameters) virtual result name parameters = 0;
#include "engine/backend_kernels.def"
#undef NCE_BACKEND_KERNEL
};

// The backend that serves tensors on `device`; throws if this build has none for it.
Backend& backend_for(Device device);

// Registers a backend at start-up (the CUDA backend calls this when the build has it).
void register_backend(Device device, Backend* backend);
// Says why `device` has no backend (a build with CUDA on a machine without a GPU): the
// one-line error backend_for gives then names this reason instead of the rebuild advice.
void mark_backend_unavailable(Device device, std::string reason);

}  // namespace nce
