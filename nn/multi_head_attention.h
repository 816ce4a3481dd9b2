// MultiHeadAttention: self-attention with several heads, as PyTorch's nn.MultiheadAttention
// with batch_first=True and query = key = value = x.
#pragma once
#include "nn/linear.h"
#include "nn/module.h"

namespace nce::nn {

class MultiHeadAttention : public Module {
public:
    // in_proj_weight ~ xavier_uniform, in_proj_bias = 0, out_proj.weight as Linear,
    // out_proj.bias = 0 (PyTorch's initialisation). dropout applies to the attention
    // probabilities in training mode.
    MultiHeadAttention(int64_t embed_dim, int64_t num_heads, double dropout, Generator& generator,
                       Dtype dtype = Dtype::Float32);

    // x [B, T, D], key_padding_mask [B, T] (nonzero = real token, 0 = padding; int64 or
    // float; undefined for none) -> [B, T, D]. Padding keys get attention probability 0;
    // every row needs at least one real token. The generator is needed only for dropout.
    //
    //   [q | k | v] = x in_proj_weight^T + in_proj_bias           [B, T, 3D]
    //   head h uses columns h·dh .. (h+1)·dh of q, k and v       dh = D / H
    //   o_h = softmax(q_h k_h^T / sqrt(dh), padding keys masked) v_h     [B, T, dh]
    //   y = [o_0 | ... | o_{H-1}] out_proj.weight^T + out_proj.bias       [B, T, D]
    Var forward(const Var& x, const Tensor& key_padding_mask, Generator* generator) const;

    int64_t embed_dim() const { return in_proj_weight.size(1); }
    int64_t num_heads() const { return num_heads_; }
    double dropout() const { return dropout_; }

    Var in_proj_weight;  // [3D, D]: the rows of W_q, then W_k, then W_v
    Var in_proj_bias;    // [3D]
    Linear out_proj;     // [D, D]

private:
    int64_t num_heads_;
    double dropout_;
};

}  // namespace nce::nn
