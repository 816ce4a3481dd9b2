// The retrieval runs' moves between the host and the device.
#include "apps/retrieval/run_device.h"

#include "apps/device_option.h"

namespace nce::apps::retrieval {

std::unique_ptr<nn::EmbeddingModel> to_run_device(std::unique_ptr<nn::EmbeddingModel> model, const RunConfig& config) {
    model->to(parse_device_name(config.device));
    return model;
}

Device model_device(nn::EmbeddingModel& model) { return model.parameters().front()->value().device(); }

Var encode_on_model_device(nn::EmbeddingModel& model, const data::EncodedBatch& batch, Generator* dropout) {
    const Device device = model_device(model);
    return model.encode(batch.ids.to(device), batch.mask.to(device), dropout);
}

Tensor beside(const Var& embeddings, const Tensor& tensor) { return tensor.to(embeddings.value().device()); }

}  // namespace nce::apps::retrieval
