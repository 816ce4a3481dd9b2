// XLM-RoBERTa's tokenizer from its SentencePiece model alone, for a model folder that has
// sentencepiece.bpe.model and no tokenizer.json (with one, data/unigram_tokenizer.h reads it,
// as sentence-transformers does). Read by libsentencepiece, with the ids fairseq gave it,
// which Hugging Face keeps:
//
//   <s> = 0   <pad> = 1   </s> = 2   <unk> = 3      SentencePiece's piece i (i >= 3) = i + 1
//   <mask> = SentencePiece's size + 1                 a text: <s> pieces </s>
//
// The special tokens written in a text are cut out before SentencePiece reads it, as Hugging
// Face does (<mask> also takes the spaces before it). These are the ids of transformers'
// SentencePiece-based XLMRobertaTokenizer; its tokenizer.json twin can differ at the edges
// (a trailing space is a "▁" piece there), which is why tokenizer.json is read first.
#pragma once
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "data/added_tokens.h"
#include "data/pretrained_tokenizer.h"

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace nce::data {

class XlmRobertaTokenizer : public PretrainedTokenizer {
public:
    static std::shared_ptr<XlmRobertaTokenizer> load(const std::filesystem::path& model_file);

    TokenizerKind kind() const override { return TokenizerKind::XlmRobertaSentencePiece; }
    ContentPieces encode_content(const std::string& text) const override;
    std::string decode(const std::vector<int64_t>& ids) const override;
    int64_t vocab_size() const override;
    int64_t pad_id() const override { return 1; }
    int64_t unknown_id() const override { return 3; }

private:
    XlmRobertaTokenizer() = default;
    int64_t to_model_id(int piece) const;

    std::shared_ptr<sentencepiece::SentencePieceProcessor> processor_;
    std::vector<AddedToken> special_tokens_;
};

}  // namespace nce::data
