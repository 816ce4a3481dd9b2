// sentence-transformers model folders: read into a "bert" EmbeddingModel (nn/bert_encoder.h),
// and written back so that SentenceTransformer(path) loads them offline.
//
// A folder as users have it on disk:
//   modules.json                 the pipeline: Transformer, Pooling, then optionally Normalize
//   config.json                  Hugging Face's BertConfig (or RoBERTa / XLM-R's)
//   model.safetensors            the BertModel's tensors under Hugging Face's names
//   sentence_bert_config.json    max_seq_length (nce's max_len; sentence-transformers 6 leaves
//                                it to tokenizer_config.json's model_max_length), do_lower_case
//   1_Pooling/config.json        the pooling mode: mean, cls, max or mean_sqrt_len (older and
//                                6's layouts alike)
//   2_Normalize/                 unit rows (present in modules.json: normalize)
//   config_sentence_transformers.json   prompts (optional)
//   tokenizer.json, vocab.txt, ...      the tokenizer (nce does not read it here; its
//                                       vocabulary must fit the model's vocab_size)
// A bare Hugging Face encoder folder (config.json, model.safetensors and the tokenizer,
// no modules.json) is read as sentence-transformers builds it: mean pooling, no
// normalisation; the notes say so.
//
// Every key of the JSON files is either used, known not to change the embeddings (listed in
// the .cpp with why), or an error naming it: nothing is ignored unseen. Missing files, a
// config that disagrees with the tensors' shapes, a vocabulary of the wrong size and a
// truncated model.safetensors are one-line errors naming the file and the fix, raised
// before the tensors' data is read.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "nn/model.h"

namespace nce::nn {

// A folder read and checked up to its weights: the config it describes (checked against
// model.safetensors' header and the tokenizer's largest id), what the reader assumed or left
// out, one line each (e.g. "no modules.json: ... mean pooling"), and the file the weights are
// in. No tensor data is read.
struct SentenceTransformersFolder {
    ModelConfig config;
    std::vector<std::string> notes;
    std::string weights;  // the Transformer module's model.safetensors
};
SentenceTransformersFolder read_sentence_transformers_folder(const std::string& folder);

struct PretrainedModel {
    std::unique_ptr<EmbeddingModel> model;
    std::vector<std::string> notes;  // the folder's (SentenceTransformersFolder::notes)
    // BertModel's pooler as the file holds it (pooler.dense.weight [D, D], .bias [D]), in the
    // model's dtype: no embedding reads it, but a folder written back with it
    // (save_sentence_transformers) gives transformers every tensor it expects. Empty when the
    // file has none, or one of another width.
    std::map<std::string, Tensor> pooler;
};

// The config a folder describes (read_sentence_transformers_folder's). `notes` (may be null)
// receives what the reader assumed or left out.
ModelConfig sentence_transformers_config(const std::string& folder, std::vector<std::string>* notes = nullptr);

// Reads the weights of a folder read before into a "bert" model with parameters in `dtype`
// (float32 or float64); the second form reads the folder first.
PretrainedModel load_sentence_transformers(const SentenceTransformersFolder& folder, Dtype dtype = Dtype::Float32);
PretrainedModel load_sentence_transformers(const std::string& folder, Dtype dtype = Dtype::Float32);

// Writes a "bert" model as a sentence-transformers folder at `folder`, which must not exist
// yet (or be empty): modules.json, config.json, model.safetensors (the parameters in their
// own dtype, under Hugging Face's names), sentence_bert_config.json, 1_Pooling/config.json,
// 2_Normalize/ when normalising, config_sentence_transformers.json (with the prompts), and
// the tokenizer files of `tokenizer_folder` (the folder the model was read from, or one of
// tokenizer files alone). `pooler`: the read folder's (PretrainedModel::pooler), written
// beside the parameters unchanged; none: the folder has no pooler. The folder is written
// under a temporary name beside it and renamed into place: the user's path holds either
// nothing or the whole folder.
void save_sentence_transformers(const std::string& folder, EmbeddingModel& model, const std::string& tokenizer_folder,
                                const std::map<std::string, Tensor>& pooler = {});

}  // namespace nce::nn
