// What data::Tokenizer (data/tokenizer.h) asks of a pretrained model's tokenizer, read from a
// Hugging Face model folder: the text's own pieces, and the special tokens put around them.
//
//   "Hello world"  ->  content ids {7592, 2088}         (WordPiece; begin/end: bytes of each)
//                      before {101} ([CLS])  after {102} ([SEP])
//   encode(max_length = 3)  ->  {101, 7592, 102}        content cut to max_length - 2 first
#pragma once
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace nce::data {

enum class TokenizerKind {
    SentencePiece,         // a tokenizer.model trained by nce (no special tokens)
    WordPiece,                // BERT's: tokenizer.json or vocab.txt
    Unigram,                  // XLM-RoBERTa's as tokenizer.json gives it (Precompiled, Metaspace)
    XlmRobertaSentencePiece,  // XLM-RoBERTa's sentencepiece.bpe.model alone, with fairseq's ids
};
const char* tokenizer_kind_name(TokenizerKind kind);

struct ContentPieces {
    std::vector<int64_t> ids;
    std::vector<int64_t> begin;  // piece i covers bytes [begin[i], end[i]) of the text
    std::vector<int64_t> end;
};

class PretrainedTokenizer {
public:
    virtual ~PretrainedTokenizer() = default;
    virtual TokenizerKind kind() const = 0;
    // The text's pieces, without special tokens.
    virtual ContentPieces encode_content(const std::string& text) const = 0;
    virtual std::string decode(const std::vector<int64_t>& ids) const = 0;
    // Ids a model's embedding table must hold: the vocabulary and the added tokens.
    virtual int64_t vocab_size() const = 0;
    virtual int64_t pad_id() const = 0;
    virtual int64_t unknown_id() const = 0;
    // The special tokens before and after the content ([CLS] ... [SEP], <s> ... </s>).
    const std::vector<int64_t>& ids_before() const { return ids_before_; }
    const std::vector<int64_t>& ids_after() const { return ids_after_; }

protected:
    std::vector<int64_t> ids_before_, ids_after_;
};

// The file a pretrained tokenizer is read from, when `path` is one (tokenizer.json, vocab.txt,
// sentencepiece.bpe.model) or a folder holding one, in that order; empty otherwise.
std::filesystem::path find_pretrained_tokenizer_file(const std::filesystem::path& path);
// Reads it. A tokenizer.json's model.type picks the kind: WordPiece or Unigram; any other
// type is one nce::Error line. When the
// folder holds the model's config.json, its vocab_size must cover the tokenizer's ids.
std::shared_ptr<const PretrainedTokenizer> load_pretrained_tokenizer(const std::filesystem::path& file);

}  // namespace nce::data
