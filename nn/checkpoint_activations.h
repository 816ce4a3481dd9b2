// Turning activation checkpointing on or off for a whole embedding model: every
// TransformerEncoder it holds recomputes its layers in the backward instead of keeping
// their intermediate values (engine/activation_checkpoint.h explains the mechanism).
// The gradients are the same bit for bit; the forward's memory drops to one [B, T, d_model]
// tensor per layer, and each step computes the encoder's forward twice.
#pragma once
#include "nn/model.h"

namespace nce::nn {

// For a TextEncoder or a SigPredictor (make_model's kinds); throws naming the kind otherwise.
void set_checkpoint_activations(EmbeddingModel& model, bool on = true);
bool checkpoint_activations(const EmbeddingModel& model);

}  // namespace nce::nn
