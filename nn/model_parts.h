// What the two embedding models share (defined in model.cpp): the encoder options a config
// gives, the checks on the mask and generator every encode() makes, and the temperature.
#pragma once
#include "nn/model.h"
#include "nn/transformer_encoder_layer.h"

namespace nce::nn {

// d_model, nhead, dim_feedforward, dropout, activation, norm_first, layer_norm_eps.
TransformerEncoderLayerOptions encoder_layer_options(const ModelConfig& config);

// Throws naming `model` unless mask is [batch, tokens] of int64 or float (nonzero = token)
// with at least one token in every row.
void check_token_mask(const Tensor& mask, int64_t batch, int64_t tokens, const std::string& model);

// Throws naming `model` when dropout is active (training mode, dropout > 0) and no
// generator was given for its masks.
void check_generator(const EmbeddingModel& model, Generator* generator);

// log_tau [1] = log 0.07, CLIP's initial temperature.
Var initial_log_tau(Dtype dtype);

}  // namespace nce::nn
