#include "nn/checkpoint_activations.h"

#include <type_traits>

#include "nn/sig_predictor.h"
#include "nn/text_encoder.h"

namespace nce::nn {
namespace {

// The model's transformer encoder, found by its kind (EmbeddingModel does not expose it);
// Model is EmbeddingModel or const EmbeddingModel, and the encoder has the same constness.
template <typename Model>
auto& encoder_of(Model& model) {
    constexpr bool is_const = std::is_const_v<Model>;
    using Text = std::conditional_t<is_const, const TextEncoder, TextEncoder>;
    using Sig = std::conditional_t<is_const, const SigPredictor, SigPredictor>;
    if (auto* text = dynamic_cast<Text*>(&model)) return text->encoder;
    if (auto* sig = dynamic_cast<Sig*>(&model)) return sig->encoder;
    fail("checkpoint_activations: model kind '{}' has no transformer encoder this knows of (text_encoder and "
         "sig_predictor do)",
         model.config().kind);
}

}  // namespace

void set_checkpoint_activations(EmbeddingModel& model, bool on) {
    encoder_of(model).checkpoint_activations = on;
}

bool checkpoint_activations(const EmbeddingModel& model) { return encoder_of(model).checkpoint_activations; }

}  // namespace nce::nn
