// Gradient checks of the nn modules and the two models, for `nce gradcheck` and the tests.
#pragma once
#include "engine/gradcheck.h"

namespace nce::nn {

// Registers every module (Linear, Embedding, LayerNorm, Dropout, MultiHeadAttention,
// TransformerEncoderLayer, TransformerEncoder) and the three models (sig_predictor,
// text_encoder, bert) at tiny sizes. The checked
// inputs are the module's input and every parameter, so the gradient of each parameter is
// compared with finite differences. Masks include left padding and gaps; dropout is off
// (eval mode) except in the cases named "dropout on", which replay the same masks on every
// evaluation by giving each one a fresh generator with a fixed seed.
void register_module_checks(CheckRegistry& registry);

}  // namespace nce::nn
