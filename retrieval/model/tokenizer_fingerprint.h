// A model and the tokenizer it was trained with belong together: the model's embedding rows
// are indexed by that tokenizer's ids, and another tokenizer with as many pieces maps the same
// ids to other pieces without any error, only worse rankings. So a run writes the tokenizer's
// fingerprint into the model's checkpoint, and eval, index, search, encode and mine check it
// wherever a checkpoint and a tokenizer meet:
//
//   save_run_model(path, model, tokenizer)    metadata "tokenizer_fingerprint": "9f3c0a...", 16 hex digits
//   check_tokenizer_matches(tokenizer, model, path)
//       the pieces: as many ids as the model's rows (a bert folder's vocabulary may be larger)
//       the fingerprint: the tokenizer's equals the checkpoint's, where the checkpoint has one
//
// The fingerprint is FNV-1a (64 bits) over the bytes of the file the tokenizer was read from
// (tokenizer.model, or a pretrained folder's tokenizer.json or vocab.txt): a copy of the file
// keeps it, a tokenizer trained again on other texts does not. Checkpoints written before the
// fingerprint existed, and model folders, get the piece count check alone.
#pragma once
#include <map>
#include <string>

#include "data/tokenizer.h"
#include "nn/model.h"

namespace nce::retrieval {

// The checkpoint metadata key that holds it.
inline constexpr const char* kTokenizerFingerprintKey = "tokenizer_fingerprint";

// 16 lowercase hex digits; the same file bytes give the same digits.
std::string tokenizer_fingerprint(const data::Tokenizer& tokenizer);

// nn::save_model with the tokenizer's fingerprint beside `metadata`.
void save_run_model(const std::string& path, nn::EmbeddingModel& model, const data::Tokenizer& tokenizer,
                    std::map<std::string, std::string> metadata = {});

// Throws nce::Error, one line naming the checkpoint and the tokenizer, unless `tokenizer` can be
// the one `model` (read from `checkpoint`, a file or a model folder) was trained with.
void check_tokenizer_matches(const data::Tokenizer& tokenizer, const nn::EmbeddingModel& model,
                             const std::string& checkpoint);

}  // namespace nce::retrieval
