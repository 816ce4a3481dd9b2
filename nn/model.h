// The two embedding models and their configuration (the checkpoint's `nce_config`).
#pragma once
#include <map>
#include <memory>
#include <string>

#include "nn/module.h"

namespace nce::nn {

struct ModelConfig {
    std::string kind = "text_encoder";  // "sig_predictor", "text_encoder" or "bert" (nn/bert_encoder.h)
    int64_t in_dim = 0;                 // sig_predictor: token feature size
    int64_t vocab_size = 0;             // text_encoder, bert
    int64_t max_len = 0;                // text_encoder: position embeddings; bert: the longest input (max_seq_length)
    int64_t d_model = 128;
    int64_t nhead = 4;
    int64_t dim_feedforward = 512;
    int64_t num_layers = 2;
    double dropout = 0.1;
    std::string activation = "relu";    // "relu" or "gelu" (exact erf form)
    bool norm_first = false;            // false: post-norm (PyTorch's default)
    double layer_norm_eps = 1e-5;
    int64_t out_dim = 0;                // 0: no output projection (text_encoder only)
    // text_encoder only: the width of the lexical head (nn/text_encoder.h), whose vector of
    // lexical_dim numbers is joined to the mean-pooled one; 0: none (the mean alone).
    int64_t lexical_dim = 0;
    // text_encoder only: the term-weight head (nn/text_encoder.h), a vector with one number per
    // vocabulary piece (the text's weight of that piece) joined to the mean-pooled one; the
    // embedding is then vocab_size wider. With lexical_dim > 0 too, the embedding holds all three
    // parts: [mean ; max-pooled ; terms].
    bool term_weights = false;
    // Learnable temperature log_tau (initialised to log 0.07); training keeps
    // tau = exp(log_tau) in [min_temperature, max_temperature] (EmbeddingModel::clamp_temperature).
    bool learnable_temperature = false;
    double min_temperature = 0.01;      // CLIP clamps its scale 1/tau at 100
    double max_temperature = 1.0;
    // Text written before each text ahead of tokenization (text_encoder, e.g. "query: "); it
    // counts towards the maximum lengths. Empty: the text as it is. At most kMaxPromptBytes
    // bytes each (a config read from a file cannot ask for a prompt of gigabytes).
    std::string query_prompt;
    std::string passage_prompt;
    static constexpr size_t kMaxPromptBytes = 1024;

    // ---- bert only (nn/bert_encoder.h: Hugging Face's BertModel, then sentence-transformers'
    // pooling). d_model, nhead, dim_feedforward, num_layers, activation, layer_norm_eps and
    // dropout (hidden_dropout_prob) keep their meaning; norm_first is false (post-LN). ----
    int64_t max_position_embeddings = 0;  // rows of the position table (>= max_len + position_offset)
    int64_t type_vocab_size = 0;          // rows of the token-type table (row 0 is used)
    // 0: BERT, token t sits at position t. p > 0: RoBERTa / XLM-R, the real tokens sit at
    // p, p+1, ... (counted over the mask) and padding at p - 1 (= pad_token_id + 1 = p).
    int64_t position_offset = 0;
    double attention_dropout = 0.1;       // attention_probs_dropout_prob
    std::string pooling = "mean";         // "mean", "cls", "max" or "mean_sqrt_len" (1_Pooling/config.json)
    // config.json's model_type, written back as read: "bert", "roberta" or "xlm-roberta" (the
    // same encoder as RoBERTa; transformers pairs it with XLM-R's tokenizer). Empty: "bert"
    // without a position offset, "roberta" with one.
    std::string hugging_face_type;
    bool normalize = true;                // 2_Normalize: unit rows; false: the pooled vector as it is
};

// An embedding model: inputs and a [B, T] mask in, L2-normalised embeddings [B, out] out
// (a bert with normalize = false, as a folder without 2_Normalize, returns its pooled rows).
class EmbeddingModel : public Module {
public:
    const ModelConfig& config() const { return config_; }
    // input: features [B, T, in_dim] (float) or token ids [B, T] (int64); mask [B, T]
    // (int64, float 0/1; nonzero = token). Dropout draws from `generator` in training mode
    // (it may be null in eval mode).
    virtual Var encode(const Tensor& input, const Tensor& mask, Generator* generator) = 0;
    // The learnable temperature, or null when the model has none.
    virtual Var* log_tau() = 0;
    // After an optimizer step: puts log_tau back into [log min_temperature, log max_temperature],
    // as CLIP clamps its logit scale after each step. The losses' own floor (tau >= 1e-4, where
    // dL/dlog_tau is 0) lies below min_temperature, so the parameter never sits where its
    // gradient vanishes and a run cannot strand it there. No-op without a learnable temperature.
    void clamp_temperature();

protected:
    explicit EmbeddingModel(ModelConfig config) : config_(std::move(config)) {}
    ModelConfig config_;
};

// Builds a model of config.kind with parameters initialised from `generator`, in `dtype`.
std::unique_ptr<EmbeddingModel> make_model(const ModelConfig& config, Generator& generator,
                                           Dtype dtype = Dtype::Float32);

// Upper limits on a config's sizes, far above any model nce trains, so that a config read
// from a file cannot ask for terabytes or overflow the size arithmetic (docs/checkpoints.md
// lists them). in_dim, out_dim, max_len, d_model and dim_feedforward share kMaxModelWidth.
inline constexpr int64_t kMaxVocabSize = int64_t{1} << 24;   // 16,777,216 token ids
inline constexpr int64_t kMaxModelWidth = int64_t{1} << 20;  // 1,048,576
inline constexpr int64_t kMaxNumLayers = 1024;

// Throws nce::Error (one line naming the field, its value and what is allowed) unless the
// config describes a model that can be built; returns it unchanged otherwise.
const ModelConfig& validate_config(const ModelConfig& config);

// The parameters a model of this config has, by state_dict name, without building it (a
// checkpoint is checked against them before anything is allocated); make_model's
// named_parameters() has exactly these names and shapes. Validates the config first.
std::map<std::string, Shape> parameter_shapes(const ModelConfig& config);

// The number of values in those parameters, log_tau included; the arithmetic is
// overflow-checked (an overflow throws, though the limits above keep it far from int64's).
int64_t parameter_count(const ModelConfig& config);

// The model's temperature tau = exp(log_tau), clamped to [min_temperature, max_temperature];
// throws if the model has no learnable temperature.
double temperature(EmbeddingModel& model);

}  // namespace nce::nn
