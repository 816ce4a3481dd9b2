// Multi-head attention over packed qkv, forward and backward: one thread per (batch entry,
// head, row) (attention_kernels.h). Plain loops rather than GEMMs: correct first, not fast.
#include <cmath>
#include <limits>

#include "engine/cpu/random_kernels.h"
#include "engine/cuda/attention_kernels.h"
#include "engine/cuda/cuda_backend.h"
#include "engine/cuda/device_tensor.h"
#include "engine/cuda/launch.h"

namespace nce::cuda {
namespace {

template <typename T>
AttentionShape<T> attention_shape(const Tensor& qkv, const PackedAttention& attention) {
    AttentionShape<T> shape;
    shape.tokens = qkv.size(1);
    shape.model_dim = qkv.size(2) / 3;
    shape.heads = attention.heads;
    shape.head_dim = shape.model_dim / attention.heads;
    shape.scale = static_cast<T>(1.0 / std::sqrt(static_cast<double>(shape.head_dim)));
    shape.drop = attention.keep < 1;
    shape.seed = attention.seed;
    shape.offset = attention.offset;
    shape.threshold = cpu::bernoulli_threshold(attention.keep);
    shape.inverse_keep = static_cast<T>(1 / attention.keep);
    return shape;
}

}  // namespace

// qkv [B, T, 3D], key_mask [B, T] or undefined -> probabilities [B, H, T, T], out [B, T, D].
void CudaBackend::packed_attention(const Tensor& qkv, const Tensor& key_mask, const PackedAttention& attention,
                                   Tensor& probabilities, Tensor& out) {
    dispatch_floating(qkv.dtype(), "packed_attention", [&](auto zero) {
        using T = decltype(zero);
        const char* op = "packed_attention";
        const AttentionShape<T> shape = attention_shape<T>(qkv, attention);
        launch(qkv.size(0) * shape.heads * shape.tokens,
               AttentionRowBody<T>{device_data<T>(qkv, op), key_mask.defined() ? device_data<T>(key_mask, op) : nullptr,
                                   device_data<T>(probabilities, op), device_data<T>(out, op), shape,
                                   std::log(std::numeric_limits<T>::min())});
    });
}

// dout [B, T, D] -> dqkv [B, T, 3D], in two launches: dS and dQ by query row, then dK and
// dV by key row (dS [B, H, T, T] is a temporary on the device).
void CudaBackend::packed_attention_backward(const Tensor& qkv, const Tensor& probabilities, const Tensor& dout,
                                            const PackedAttention& attention, Tensor& dqkv) {
    dispatch_floating(qkv.dtype(), "packed_attention backward", [&](auto zero) {
        using T = decltype(zero);
        const char* op = "packed_attention backward";
        const AttentionShape<T> shape = attention_shape<T>(qkv, attention);
        const int64_t rows = qkv.size(0) * shape.heads * shape.tokens;
        Tensor score_gradient = Tensor::empty(probabilities.shape(), qkv.dtype(), Device::CUDA);
        const T* qkv_data = device_data<T>(qkv, op);
        const T* p_data = device_data<T>(probabilities, op);
        const T* dout_data = device_data<T>(dout, op);
        T* ds_data = device_data<T>(score_gradient, op);
        T* dqkv_data = device_data<T>(dqkv, op);
        launch(rows, AttentionQueryGradientBody<T>{qkv_data, p_data, dout_data, ds_data, dqkv_data, shape});
        launch(rows, AttentionKeyValueGradientBody<T>{qkv_data, p_data, dout_data, ds_data, dqkv_data, shape});
    });
}

}  // namespace nce::cuda
