// A pretrained encoder as the sig_predictor's frozen teacher (retrieval/code/teacher_features.h):
// the teacher-features folder written from a sentence-transformers model folder over a mined
// code corpus, so that `nce code features` learns from a real model's states rather than the
// synthetic ones. Row i is function i of the corpus:
//
//   signature_features  [N, T, D]  the model's last-layer token states h_L of the signature
//                                  and docstring (query i), T = `tokens` at most, padded
//   signature_mask      [N, T]     the tokenizer's mask of those tokens
//   body_embeddings     [N, D]     the model's own sentence embedding of the body (passage
//                                  i): its pooling, normalised, first max_body_tokens tokens
//   groups              [N]        each function's file (or package), numbered in order
//
// The model is frozen: eval mode, no graph; nothing of it is trained here.
#pragma once
#include <cstdint>
#include <string>

#include "data/dataset.h"

namespace nce::code {

struct PretrainedTeacherOptions {
    std::string model_folder;     // a sentence-transformers (or Hugging Face bert) folder
    int64_t tokens = 32;          // T: the signature's tokens kept, special tokens included
    int64_t max_body_tokens = 128;
    int64_t batch_size = 32;
};

// Writes the folder (new or empty; whole or absent). Throws naming the folder when its model is
// not a bert encoder (only those give token states here), or the corpus has fewer than two functions.
void write_pretrained_teacher_features(const std::string& folder, const data::RetrievalDataset& corpus,
                                       const PretrainedTeacherOptions& options);

}  // namespace nce::code
