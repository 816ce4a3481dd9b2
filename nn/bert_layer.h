// BertLayer: one encoder layer of Hugging Face's BertModel, its tensors under Hugging Face's
// names (encoder.layer.N.attention.self.query.weight, ...).
//
//   q, k, v = x W_q^T + b_q, x W_k^T + b_k, x W_v^T + b_v           [B, T, D] each
//   c = heads side by side of softmax(q_h k_h^T / sqrt(dh), padding keys masked) v_h   [B, T, D]
//   a = LayerNorm_1(x + dropout(c W_o^T + b_o))                     attention.output
//   y = LayerNorm_2(a + dropout(act(a W_i^T + b_i) W_2^T + b_2))    intermediate, output
//
// The post-LN layer PyTorch's TransformerEncoderLayer computes (transformer_encoder_layer.h),
// with the query, key and value projections kept apart as Hugging Face stores them. They are
// stacked into one [3D, D] weight by the engine's concat (its backward hands each its rows
// back) and run through packed_attention, so the gradient is that of concat, affine,
// packed_attention, dropout, gelu and layer_norm: no op of its own.
#pragma once
#include "nn/layer_norm.h"
#include "nn/linear.h"
#include "nn/module.h"

namespace nce::nn {

struct BertLayerOptions {
    int64_t hidden_size = 0;        // D
    int64_t num_heads = 0;          // H, dividing D
    int64_t intermediate_size = 0;  // F
    double layer_norm_eps = 1e-12;
    double hidden_dropout = 0.1;     // on both residual branches
    double attention_dropout = 0.1;  // on the attention probabilities
    bool gelu = true;                // true: gelu (erf form, Hugging Face's "gelu"); false: relu
};

// query, key, value: each Linear D -> D.
struct BertSelfAttention : Module {
    BertSelfAttention(int64_t hidden_size, Generator& generator, Dtype dtype);
    Linear query, key, value;
};

// dense then a residual LayerNorm: attention.output (D -> D) and output (F -> D).
struct BertResidualOutput : Module {
    BertResidualOutput(int64_t in_features, int64_t hidden_size, double eps, Generator& generator, Dtype dtype);
    Linear dense;
    LayerNorm layer_norm;  // registered as "LayerNorm", Hugging Face's name
};

struct BertAttention : Module {
    BertAttention(const BertLayerOptions& options, Generator& generator, Dtype dtype);
    BertSelfAttention self;
    BertResidualOutput output;
};

// intermediate.dense: D -> F (the activation follows it).
struct BertIntermediate : Module {
    BertIntermediate(int64_t hidden_size, int64_t intermediate_size, Generator& generator, Dtype dtype);
    Linear dense;
};

class BertLayer : public Module {
public:
    // Weights ~ normal(0, 0.02), biases 0, LayerNorms 1 and 0 (BertPreTrainedModel's
    // initialisation, initializer_range 0.02).
    BertLayer(const BertLayerOptions& options, Generator& generator, Dtype dtype = Dtype::Float32);

    // x [N, D]: the token rows of a [B, T] batch, key_padding_mask [B, T] (nonzero = token)
    // -> [N, D]. `rows` (int64 [N]) names each row's place b·T + t in the batch; undefined,
    // x holds every place in order (N = B·T). Only attention mixes rows, and it reads them
    // laid out as [B, T] with padding rows 0; everything else is row by row, so padding
    // rows left out cost nothing and change no real row. Dropout runs in training mode and
    // then needs the generator.
    Var forward(const Var& x, const Tensor& key_padding_mask, const Tensor& rows, Generator* generator) const;

    BertAttention attention;
    BertIntermediate intermediate;
    BertResidualOutput output;

private:
    BertLayerOptions options_;
};

// Gives a Linear BERT's initial values: weight ~ normal(0, 0.02), bias 0.
void bert_initialise(Linear& linear, Generator& generator);

}  // namespace nce::nn
