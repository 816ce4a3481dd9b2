#include "retrieval/model/model_source.h"

#include <filesystem>

#include "engine/error.h"
#include "retrieval/model/text_model.h"

namespace nce::retrieval {

ModelSource::ModelSource(std::string init)
    : path_(std::move(init)), folder_(!path_.empty() && std::filesystem::is_directory(path_)) {}

const nn::SentenceTransformersFolder& ModelSource::folder() {
    NCE_CHECK(folder_, "--init {}: no model folder", path_);
    if (!read_) read_ = nn::read_sentence_transformers_folder(path_);
    return *read_;
}

std::unique_ptr<nn::EmbeddingModel> ModelSource::read_folder_model(const RunConfig& config) {
    NCE_CHECK(!weights_read_, "--init {}: the weights are read once a run; copy the model read (copied_model)", path_);
    nn::PretrainedModel pretrained = nn::load_sentence_transformers(folder());
    weights_read_ = true;
    pooler_ = std::move(pretrained.pooler);
    return as_the_run_reads(std::move(pretrained.model), config);
}

const nn::ModelConfig& ModelSource::checkpoint_config() {
    NCE_CHECK(is_checkpoint(), "--init {}: no model checkpoint", path_);
    if (!checkpoint_) {
        NCE_CHECK(!weights_read_, "--init {}: the checkpoint was handed over already", path_);
        checkpoint_ = load_text_encoder(path_);
        weights_read_ = true;
    }
    return checkpoint_->config();
}

std::unique_ptr<nn::EmbeddingModel> ModelSource::take_checkpoint_model() {
    checkpoint_config();
    return std::move(checkpoint_);
}

void ModelSource::save_fine_tuned(const std::string& target, nn::EmbeddingModel& model) const {
    NCE_CHECK(folder_ && weights_read_, "--init {}: a fine-tuned model is written back after the folder's weights "
              "are read", path_);
    nn::save_sentence_transformers(target, model, path_, pooler_);
}

}  // namespace nce::retrieval
