// --device for the retrieval runs: the one place where a run's tensors cross between the host
// and the device (RunConfig::device; retrieval/settings/device_name.h checks that it has a backend).
//
//   the models       made or loaded on the host, moved once, right after (to_run_device);
//                    everything else follows the model's device, so a model left on the
//                    host computes on the host
//   token ids, masks made on the host by the tokenizer, copied to the model's device for each
//                    forward (encode_on_model_device; training, pretraining, encoding)
//   a batch's tensors qid, rank, score and the pretraining teacher's scores and rows, made on
//                    the host by data/batching, copied beside the embeddings they go with
//                    (beside)
//   loss, gradients, AdamW's moments
//                    on the device: the losses compute on their inputs' device, the
//                    optimizer makes its state from each parameter's value; the trainer
//                    reads one number back per step (the loss) and per parameter (its
//                    gradient's squared norm, for clipping)
//   embeddings       copied to the host (encode_texts): FAISS, the rankings and the metrics
//                    read host memory
//   checkpoints      written from host copies (nn/safetensors.cpp copies each tensor) and
//                    read onto each parameter's device (nn/checkpoint.cpp)
#pragma once
#include <memory>

#include "data/tokenizer.h"
#include "engine/nce.h"
#include "nn/model.h"

namespace nce::retrieval {

// `model` on the run's device (RunConfig::device; Module::to), returned for use at the line
// that makes or loads it.
std::unique_ptr<nn::EmbeddingModel> to_run_device(std::unique_ptr<nn::EmbeddingModel> model, Device device);

// The device `model`'s parameters are on.
Device model_device(nn::EmbeddingModel& model);

// model.encode on `batch` copied to the model's device: [B, D] there, a graph unless grad is
// off; `dropout` draws the dropout masks (nullptr: none, as in eval mode). A batch of more
// than 32 rows is embedded 32 rows at a time, grouped by length, each group padded to its own
// longest row (run_device.cpp).
Var encode_on_model_device(nn::EmbeddingModel& model, const data::EncodedBatch& batch, Generator* dropout);

// `tensor` copied to the device `embeddings` are on (itself when it is there already).
Tensor beside(const Var& embeddings, const Tensor& tensor);

}  // namespace nce::retrieval
