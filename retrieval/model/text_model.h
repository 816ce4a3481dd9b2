// The tokenizer and the text_encoder of a run, and encoding texts with them.
//
//   texts --with_prompt (the model's query or passage prompt in front)
//         --Tokenizer::encode (truncated at max_length, counted)--> ids, mask [B, T]
//         --text_encoder.encode (eval mode, no graph)--> unit rows [B, D]
//
// The tokenizer is trained on the training split's texts (queries and passages), so nothing
// of the validation or test texts leaks into it, and saved as <output>/tokenizer.model.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "retrieval/embedding/prompts.h"
#include "retrieval/settings/run_config.h"
#include "data/tokenizer.h"
#include "engine/nce.h"
#include "nn/model.h"

namespace nce::retrieval {

// Trains a SentencePiece model (config.vocab_size, tokenizer_type, character_coverage,
// seeded with config.seed) on `texts` and saves it as `<directory>/tokenizer.model`. For the
// unigram model vocab_size is an upper bound: texts too small to fill it give fewer pieces.
// A BPE vocabulary the texts cannot fill is an error naming --vocab-size and the size they allow.
// identifier_words: the tokenizer reads code's names as words (data/identifier_words.h).
data::Tokenizer train_run_tokenizer(const std::vector<std::string>& texts, const RunConfig& config,
                                    const std::string& directory, bool identifier_words);

// The text_encoder configuration of a run: config's sizes, max_len = the larger of the two
// maximum lengths, no output projection, a lexical head of config.lexical_dim (0: none),
// fixed temperature (the loss holds tau), and the run's query and passage prompts.
nn::ModelConfig text_encoder_config(const RunConfig& config, int64_t vocab_size);

// The tokens `prompt` takes before a text (0 for none), the special tokens around every text
// ([CLS], [SEP]) not counted: a passage window leaves the rest for the passage's own text.
int64_t prompt_tokens(const data::Tokenizer& tokenizer, const std::string& prompt);

// The same model (its parameters copied) with other prompts in its config; `model` itself
// when they are already its own.
std::unique_ptr<nn::EmbeddingModel> with_model_prompts(std::unique_ptr<nn::EmbeddingModel> model,
                                                       const std::string& query_prompt,
                                                       const std::string& passage_prompt);

// The same model (its parameters copied) trained with dropout `dropout` (--dropout): on its
// hidden states and, for a bert, on its attention probabilities as well; `model` itself when
// its hidden dropout already is that, so a pretrained model keeps its own pair (MiniLM's 0.1
// and 0.1) unless the run asks for another.
std::unique_ptr<nn::EmbeddingModel> with_training_dropout(std::unique_ptr<nn::EmbeddingModel> model, double dropout);

// A second model with the same config and parameters (copied: training one leaves the other
// as it was), on the same device and in the same mode.
std::unique_ptr<nn::EmbeddingModel> copied_model(nn::EmbeddingModel& model);

// A freshly initialised text_encoder; the same config and seed give the same weights. Refused
// first, with one line, when training it could not fit in memory (check_run_memory).
std::unique_ptr<nn::EmbeddingModel> make_text_encoder(const RunConfig& config, int64_t vocab_size);

// Throws nce::Error, one line with the estimate and the settings that lower it, when a training
// step of `model` with the run's batch (its GradCache chunk, the lengths, activation
// checkpointing) would not fit in memory (nn/memory_estimate.h). Corpus pretraining checks its
// own batch of pseudo-queries and candidates once it knows the corpus has enough windows.
void check_run_memory(const nn::ModelConfig& model, const RunConfig& config);

// Loads a model checkpoint that must hold a text_encoder: a missing file, a file that is not
// a checkpoint, or a checkpoint of another model kind (a sig_predictor) is one error line
// naming the file and what was expected.
std::unique_ptr<nn::EmbeddingModel> load_text_encoder(const std::string& checkpoint_path);

// A pretrained model folder (a sentence-transformers folder, or a bare Hugging Face encoder):
// what --init FOLDER names. Any directory is taken for one; its reader names what is missing.
bool is_model_folder(const std::string& path);

// The folder's model (nn/sentence_transformers_folder.h), with what nce assumed printed as
// "--init FOLDER: note: ..." lines, the run's prompts where the run gives them (the folder's own,
// from config_sentence_transformers.json, otherwise) and its dropout (with_training_dropout).
std::unique_ptr<nn::EmbeddingModel> load_pretrained_folder(const std::string& folder, const RunConfig& config,
                                                           bool print_notes = true);

// A pretrained model as a run reads it: its own prompts unless the run gives others, the
// run's dropout.
std::unique_ptr<nn::EmbeddingModel> as_the_run_reads(std::unique_ptr<nn::EmbeddingModel> pretrained,
                                                     const RunConfig& config);

// The tokenizer kept in `folder` beside a model checkpoint: tokenizer.model (one nce trained),
// else tokenizer/ (a pretrained model's files, kept by a run fine-tuned from --init FOLDER);
// empty when the folder holds neither.
std::string tokenizer_beside(const std::string& folder);

// Copies the tokenizer files of a model folder (tokenizer.json, vocab.txt, tokenizer_config.json,
// special_tokens_map.json, added_tokens.json, sentencepiece.bpe.model) into `destination`,
// created when missing; data::Tokenizer::load(destination) then reads the same tokenizer.
void copy_tokenizer_files(const std::string& folder, const std::string& destination);

// How many texts went in and how many of them were longer than the model's maximum length
// (in tokens) and so lost their end.
struct TruncationCount {
    int64_t texts = 0;
    int64_t truncated = 0;
};

// The number of `texts` with more than max_length tokens.
int64_t count_truncated(const data::Tokenizer& tokenizer, const std::vector<std::string>& texts, int64_t max_length);

// Embeds `texts` in batches of batch_size on the model's device: float32 [texts, D] on the
// host, unit rows, in the texts' order. The batches hold texts of like length (longest first),
// so that little is spent on padding. The model is put in eval mode and no graph is built; each
// text keeps its first max_length tokens. When `count` is given, the texts and the truncated ones are added
// to it. An empty text (no token) is an error naming its position.
Tensor encode_texts(nn::EmbeddingModel& model, const data::Tokenizer& tokenizer, const std::vector<std::string>& texts,
                    int64_t max_length, int64_t batch_size, TruncationCount* count = nullptr);

// The first `dimensions` columns of unit rows [N, D], each row re-normalised to unit length
// (a Matryoshka-trained model's short embedding), [N, dimensions] in the embeddings' dtype.
// 0 or D: the rows as they are. Throws naming --truncate-dim outside 0..D, or a row whose prefix is all zero.
Tensor truncate_embeddings(const Tensor& embeddings, int64_t dimensions);

}  // namespace nce::retrieval
