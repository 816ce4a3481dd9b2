// BertEncoder: a sentence-transformers BERT model, kind "bert": Hugging Face's BertModel
// (RoBERTa / XLM-R with position_offset > 0), then sentence-transformers' Pooling and
// Normalize modules. Its tensors carry Hugging Face's names, so a model.safetensors of a
// BertModel loads as it is (nn/sentence_transformers_folder.h reads and writes the folder).
//
//   ids [B, T], mask [B, T]
//   e = word_embeddings[ids] + token_type_embeddings[0] + position_embeddings[pos]   [B, T, D]
//       pos_bt = t (BERT), or p - 1 + (real tokens in row b up to t) for a real token and
//       p - 1 for padding (RoBERTa, p = position_offset = pad_token_id + 1)
//   h_0 = dropout(LayerNorm(e))                                       embeddings.LayerNorm
//   h_l = BertLayer_l(h_{l-1}, mask)    l = 1 .. L                    encoder.layer.{l-1}
//   pooled = mean over the real tokens of h_L                         [B, D]  pooling "mean"
//            h_L[:, 0]                                                        "cls"
//            max over the real tokens of h_L (padding set to -1e9)            "max"
//            mean · sqrt(real tokens)                                         "mean_sqrt_len"
//   out = pooled / max(|pooled|, 1e-12) with normalize, else pooled   [B, D]
//
// Every step is an engine op (index_select, add, layer_norm, the layer's ops,
// masked_mean_pool, slice, max, mul, l2_normalize), so the gradient is theirs. The token
// types are all 0, as sentence-transformers' tokenizer gives them for a single text.
// BertModel's pooler (pooler.dense, tanh of the [CLS] state) is not part of it:
// sentence-transformers' Transformer module reads the token states, not the pooler.
#pragma once
#include <map>
#include <memory>
#include <vector>

#include "nn/bert_layer.h"
#include "nn/embedding.h"
#include "nn/layer_norm.h"
#include "nn/model.h"

namespace nce::nn {

// embeddings.{word_embeddings, position_embeddings, token_type_embeddings, LayerNorm}.
struct BertEmbeddings : Module {
    BertEmbeddings(const ModelConfig& config, Generator& generator, Dtype dtype);
    Embedding word_embeddings;        // [vocab_size, D]
    Embedding position_embeddings;    // [max_position_embeddings, D]
    Embedding token_type_embeddings;  // [type_vocab_size, D]
    LayerNorm layer_norm;             // registered as "LayerNorm"
};

// encoder.layer.0, encoder.layer.1, ...
// checkpoint_activations: each layer runs under engine/activation_checkpoint.h's checkpoint(),
// keeping only its input [B, T, D] and recomputing the rest in the backward (the same
// gradients, for a second forward), as TransformerEncoder does.
struct BertLayerStack : Module {
    BertLayerStack(const ModelConfig& config, Generator& generator, Dtype dtype);
    // x [B, T, D] through every layer in order, all with the same mask -> [B, T, D]; on the
    // CPU the layers compute the real tokens' rows only, and padding places come back 0.
    Var forward(const Var& x, const Tensor& mask, Generator* generator) const;

    std::vector<std::unique_ptr<BertLayer>> layer;
    bool checkpoint_activations = false;
};

class BertEncoder : public EmbeddingModel {
public:
    // config.kind must be "bert" (validate_config says what else it needs).
    BertEncoder(const ModelConfig& config, Generator& generator, Dtype dtype = Dtype::Float32);

    // ids int64 [B, T] with T <= max_len and every id in [0, vocab_size); mask [B, T]
    // (nonzero = token, a token in every row) -> [B, d_model], unit rows with normalize.
    Var encode(const Tensor& input, const Tensor& mask, Generator* generator) override;
    // The last layer's token states h_L [B, T, D] (sentence-transformers' token_embeddings).
    Var token_states(const Tensor& input, const Tensor& mask, Generator* generator);
    Var* log_tau() override { return config_.learnable_temperature ? &log_tau_ : nullptr; }

    BertEmbeddings embeddings;
    BertLayerStack encoder;

private:
    Var log_tau_;  // [1], registered only with config.learnable_temperature
};

// The parameters of a "bert" config by Hugging Face name (model.cpp's parameter_shapes
// calls it for that kind; the config is validated there).
std::map<std::string, Shape> bert_parameter_shapes(const ModelConfig& config);

// Throws unless the bert-only fields of `config` describe a model that can be built.
void validate_bert_config(const ModelConfig& config);

}  // namespace nce::nn
