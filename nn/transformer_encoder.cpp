#include "nn/transformer_encoder.h"

#include <string>

#include "engine/activation_checkpoint.h"

namespace nce::nn {

TransformerEncoder::TransformerEncoder(const TransformerEncoderLayerOptions& options, int64_t num_layers,
                                       Generator& generator, Dtype dtype) {
    NCE_CHECK(num_layers > 0, "TransformerEncoder: num_layers must be positive, got {}", num_layers);
    for (int64_t i = 0; i < num_layers; ++i) {
        layers.push_back(std::make_unique<TransformerEncoderLayer>(options, generator, dtype));
        register_module("layers." + std::to_string(i), *layers.back());
    }
}

Var TransformerEncoder::forward(const Var& x, const Tensor& key_padding_mask, Generator* generator) const {
    Var h = x;  // [B, T, d_model]
    for (const auto& layer : layers) {
        if (!checkpoint_activations) {
            h = layer->forward(h, key_padding_mask, generator);
            continue;
        }
        // The closure outlives this call (the backward runs it again): it holds the layer by
        // pointer and the mask by value.
        TransformerEncoderLayer* recomputed_layer = layer.get();
        auto run_layer = [recomputed_layer, key_padding_mask, generator](const Var& input) {
            return recomputed_layer->forward(input, key_padding_mask, generator);
        };
        h = checkpoint(run_layer, h, layer->parameters(), generator);
    }
    return h;
}

}  // namespace nce::nn
