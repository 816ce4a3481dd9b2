// TransformerEncoder: a stack of TransformerEncoderLayers named layers.0, layers.1, ...,
// as PyTorch's nn.TransformerEncoder with no final norm.
//
// checkpoint_activations: each layer runs under engine/activation_checkpoint.h's
// checkpoint(), keeping only its input [B, T, d_model] for the backward and recomputing
// the rest there (the same gradients bit for bit, at the cost of a second forward).
#pragma once
#include <memory>
#include <vector>

#include "nn/transformer_encoder_layer.h"

namespace nce::nn {

class TransformerEncoder : public Module {
public:
    // num_layers layers with the same options, each with its own initial values.
    TransformerEncoder(const TransformerEncoderLayerOptions& options, int64_t num_layers, Generator& generator,
                       Dtype dtype = Dtype::Float32);

    // x [B, T, d_model] through every layer in order, all with the same key_padding_mask.
    Var forward(const Var& x, const Tensor& key_padding_mask, Generator* generator) const;

    std::vector<std::unique_ptr<TransformerEncoderLayer>> layers;
    bool checkpoint_activations = false;  // recompute each layer in the backward (off: keep its graph)
};

}  // namespace nce::nn
