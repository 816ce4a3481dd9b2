#include "nn/checkpoint_activations.h"

#include "nn/bert_encoder.h"
#include "nn/sig_predictor.h"
#include "nn/text_encoder.h"

namespace nce::nn {
namespace {

// The switch of the model's layer stack, found by its kind (EmbeddingModel does not expose it).
bool& switch_of(const EmbeddingModel& model) {
    auto& changeable = const_cast<EmbeddingModel&>(model);  // the switch is a setting, not a parameter
    if (auto* text = dynamic_cast<TextEncoder*>(&changeable)) return text->encoder.checkpoint_activations;
    if (auto* sig = dynamic_cast<SigPredictor*>(&changeable)) return sig->encoder.checkpoint_activations;
    if (auto* bert = dynamic_cast<BertEncoder*>(&changeable)) return bert->encoder.checkpoint_activations;
    fail("checkpoint_activations: model kind '{}' has no layer stack this knows of (text_encoder, sig_predictor and "
         "bert do)",
         model.config().kind);
}

}  // namespace

void set_checkpoint_activations(EmbeddingModel& model, bool on) { switch_of(model) = on; }

bool checkpoint_activations(const EmbeddingModel& model) { return switch_of(model); }

}  // namespace nce::nn
