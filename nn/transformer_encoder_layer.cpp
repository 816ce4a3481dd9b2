#include "nn/transformer_encoder_layer.h"

namespace nce::nn {

Activation parse_activation(const std::string& name) {
    if (name == "relu") return Activation::Relu;
    if (name == "gelu") return Activation::Gelu;
    fail("activation: unknown activation '{}'; use relu or gelu", name);
}

const char* activation_name(Activation activation) { return activation == Activation::Relu ? "relu" : "gelu"; }

// Submodules are built (and draw their initial values) in PyTorch's order: self_attn,
// linear1, linear2; the norms start at ones and zeros.
TransformerEncoderLayer::TransformerEncoderLayer(const TransformerEncoderLayerOptions& options, Generator& generator,
                                                 Dtype dtype)
    : self_attn(options.d_model, options.nhead, options.dropout, generator, dtype),
      linear1(options.d_model, options.dim_feedforward, generator, dtype),
      dropout(options.dropout),
      linear2(options.dim_feedforward, options.d_model, generator, dtype),
      norm1(options.d_model, options.layer_norm_eps, dtype),
      norm2(options.d_model, options.layer_norm_eps, dtype),
      dropout1(options.dropout),
      dropout2(options.dropout),
      options_(options) {
    register_module("self_attn", self_attn);
    register_module("linear1", linear1);
    register_module("dropout", dropout);
    register_module("linear2", linear2);
    register_module("norm1", norm1);
    register_module("norm2", norm2);
    register_module("dropout1", dropout1);
    register_module("dropout2", dropout2);
}

// ff(x) = linear2(dropout(activation(linear1(x))))     [B, T, D] -> [B, T, F] -> [B, T, D]
// relu and its dropout run as one op (the same values and draws as the two, one pass).
Var TransformerEncoderLayer::feed_forward(const Var& x, Generator* generator) const {
    Var hidden = linear1.forward(x);  // [B, T, F]
    if (options_.activation == Activation::Relu && dropout.training() && dropout.p() > 0 && generator != nullptr)
        return linear2.forward(relu_dropout(hidden, dropout.p(), *generator, true));  // [B, T, D]
    hidden = options_.activation == Activation::Relu ? relu(hidden) : gelu(hidden, GeluApproximation::Erf);
    return linear2.forward(dropout.forward(hidden, generator));  // [B, T, D]
}

Var TransformerEncoderLayer::forward(const Var& x, const Tensor& key_padding_mask, Generator* generator) const {
    NCE_CHECK(x.value().rank() == 3 && x.size(2) == options_.d_model,
              "TransformerEncoderLayer: x must be [B, T, d_model = {}], got {}", options_.d_model,
              shape_string(x.shape()));
    if (options_.norm_first) {
        Var h = x + dropout1.forward(self_attn.forward(norm1.forward(x), key_padding_mask, generator), generator);
        return h + dropout2.forward(feed_forward(norm2.forward(h), generator), generator);
    }
    Var h = norm1.forward(x + dropout1.forward(self_attn.forward(x, key_padding_mask, generator), generator));
    return norm2.forward(h + dropout2.forward(feed_forward(h, generator), generator));
}

}  // namespace nce::nn
