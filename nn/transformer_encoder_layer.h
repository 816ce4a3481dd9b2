// TransformerEncoderLayer: self-attention and a two-layer feed-forward block, each with a
// residual connection and a layer norm, as PyTorch's nn.TransformerEncoderLayer with
// batch_first=True.
#pragma once
#include <string>

#include "nn/dropout.h"
#include "nn/layer_norm.h"
#include "nn/linear.h"
#include "nn/module.h"
#include "nn/multi_head_attention.h"

namespace nce::nn {

enum class Activation { Relu, Gelu };  // Gelu is the exact form x · Φ(x) (erf), PyTorch's "gelu"

// "relu" or "gelu"; throws naming the accepted values otherwise.
Activation parse_activation(const std::string& name);
const char* activation_name(Activation activation);

struct TransformerEncoderLayerOptions {
    int64_t d_model = 128;
    int64_t nhead = 4;
    int64_t dim_feedforward = 512;
    double dropout = 0.1;
    Activation activation = Activation::Relu;
    bool norm_first = false;  // false: post-norm (PyTorch's default)
    double layer_norm_eps = 1e-5;
};

class TransformerEncoderLayer : public Module {
public:
    TransformerEncoderLayer(const TransformerEncoderLayerOptions& options, Generator& generator,
                            Dtype dtype = Dtype::Float32);

    // x [B, T, d_model], key_padding_mask [B, T] (nonzero = real token; undefined for none)
    // -> [B, T, d_model]. With ff(x) = linear2(dropout(activation(linear1(x)))):
    //   post-norm:  x = norm1(x + dropout1(self_attn(x)))
    //               x = norm2(x + dropout2(ff(x)))
    //   norm_first: x = x + dropout1(self_attn(norm1(x)))
    //               x = x + dropout2(ff(norm2(x)))
    Var forward(const Var& x, const Tensor& key_padding_mask, Generator* generator) const;

    const TransformerEncoderLayerOptions& options() const { return options_; }

    MultiHeadAttention self_attn;
    Linear linear1;   // [dim_feedforward, d_model]
    Dropout dropout;  // inside the feed-forward block
    Linear linear2;   // [d_model, dim_feedforward]
    LayerNorm norm1, norm2;
    Dropout dropout1, dropout2;  // on the two residual branches

private:
    Var feed_forward(const Var& x, Generator* generator) const;

    TransformerEncoderLayerOptions options_;
};

}  // namespace nce::nn
