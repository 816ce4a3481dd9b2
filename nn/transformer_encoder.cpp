#include "nn/transformer_encoder.h"

#include <string>

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
    Var h = x;
    for (const auto& layer : layers) h = layer->forward(h, key_padding_mask, generator);
    return h;
}

}  // namespace nce::nn
