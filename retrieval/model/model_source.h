// The model a run starts from, as --init names it, resolved once: nothing (a fresh model),
// an nce checkpoint (a text_encoder, its tokenizer.model beside it), or a pretrained model
// folder (sentence-transformers, or a bare Hugging Face encoder). Each is read once: a
// checkpoint when first asked about; a folder's config when first asked for, its weights by
// read_folder_model. The zero-shot row, the model that trains (a copy of it, copied_model)
// and the folder written back at the end all come from that one read.
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "engine/tensor.h"
#include "nn/model.h"
#include "nn/sentence_transformers_folder.h"
#include "retrieval/settings/run_config.h"

namespace nce::retrieval {

class ModelSource {
public:
    explicit ModelSource(std::string init);  // reads nothing yet

    bool fresh() const { return path_.empty(); }
    bool is_folder() const { return folder_; }
    bool is_checkpoint() const { return !fresh() && !folder_; }
    const std::string& path() const { return path_; }

    // A folder's config (its JSON files, checked against model.safetensors' header and the
    // tokenizer's ids) and what the reader assumed, read on the first call.
    const nn::SentenceTransformersFolder& folder();
    // A folder's model as a run reads it: its own prompts unless the run gives others, the
    // run's dropout. Reads the weights: once a source.
    std::unique_ptr<nn::EmbeddingModel> read_folder_model(const RunConfig& config);
    // A checkpoint's config: the checkpoint is read on the first call (load_text_encoder: a
    // file of another kind is one line naming it), and its model kept for take_checkpoint_model.
    const nn::ModelConfig& checkpoint_config();
    // The checkpoint's model, handed over (read now when checkpoint_config did not): once a source.
    std::unique_ptr<nn::EmbeddingModel> take_checkpoint_model();

    // `model`, fine-tuned from this folder, written as a sentence-transformers folder at
    // `target`: with this folder's tokenizer files and the pooler its weights held.
    void save_fine_tuned(const std::string& target, nn::EmbeddingModel& model) const;

private:
    std::string path_;
    bool folder_ = false;
    std::optional<nn::SentenceTransformersFolder> read_;
    bool weights_read_ = false;
    std::unique_ptr<nn::EmbeddingModel> checkpoint_;
    std::map<std::string, Tensor> pooler_;
};

}  // namespace nce::retrieval
