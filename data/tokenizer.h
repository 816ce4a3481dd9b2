// Tokenizer: text -> token ids. Two families behind one interface:
//
// * SentencePiece models trained by nce (Debian's libsentencepiece). A model is trained on the
//   corpus's own texts (unigram or BPE) and saved as one file, `<dir>/tokenizer.model`;
//   loading that file gives the same ids for the same text. Ids 0 and 1 are <pad> and <unk>;
//   no begin/end-of-sentence pieces are added.
// * A pretrained model's tokenizer from a Hugging Face model folder (data/pretrained_tokenizer.h):
//   BERT's WordPiece (tokenizer.json or vocab.txt) and XLM-RoBERTa's Unigram (tokenizer.json,
//   or its sentencepiece.bpe.model alone). Their ids are those of Hugging Face's tokenizers, with the
//   model's special tokens around each text ([CLS] ... [SEP], <s> ... </s>).
//
// encode() turns a list of texts into the two tensors a text encoder takes:
//
//   texts  = {"hello world", "hi"}        (say "hello world" -> 3 pieces, "hi" -> 1 piece)
//   ids    = [[17, 52,  9],               int64 [B, T], T = longest text (capped at max_length)
//             [41,  0,  0]]               right-padded with pad_id() (0 here)
//   mask   = [[ 1,  1,  1],               int64 [B, T], 1 = token, 0 = padding
//             [ 1,  0,  0]]
//
// SentencePiece's own logging is kept quiet: its errors come back as nce::Error.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "data/pretrained_tokenizer.h"
#include "engine/tensor.h"

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace nce::data {

enum class TokenizerModelType { Unigram, Bpe };

// "unigram" or "bpe"; anything else throws naming the choices.
TokenizerModelType parse_tokenizer_model_type(const std::string& name);
const char* tokenizer_model_type_name(TokenizerModelType type);

struct TokenizerOptions {
    int64_t vocab_size = 8000;
    TokenizerModelType model_type = TokenizerModelType::Unigram;
    // The fraction of the corpus's characters the vocabulary must cover; the rarest rest
    // become <unk>. 0.9995 suits large alphabets (Korean, Chinese, Japanese); 1.0 suits
    // small ones (English).
    double character_coverage = 0.9995;
    // SentencePiece's random seed (it samples when the corpus is large); unset: its default.
    // SentencePiece keeps it process-wide: it stays set after training.
    std::optional<uint32_t> seed;
    // false: vocab_size is an upper bound (SentencePiece's hard_vocab_limit=false, unigram
    // only): texts too small to fill it give fewer pieces instead of an error.
    bool exact_vocab_size = true;
    // Read source code's names as words (data/identifier_words.h): "getLineNumber" and
    // "line_number" are split and lower-cased before SentencePiece sees them, in training and
    // in every encode. The trained model carries the choice (a control piece,
    // <identifier-words-2>, which no text encodes to), so a loaded tokenizer reads texts as it
    // was trained to; decode() gives the rewritten text back. A model of the first rule
    // (<identifier-words>, punctuation left attached) is refused at load.
    bool identifier_words = false;
};

struct EncodedBatch {
    Tensor ids;   // int64 [B, T]
    Tensor mask;  // int64 [B, T]: 1 = token, 0 = padding
};

class Tokenizer {
public:
    // Trains a model on `texts` and saves it as `<directory>/tokenizer.model` (the directory is
    // created when missing). Errors, e.g. a vocabulary larger than the texts can fill, are one
    // nce::Error line naming the option to change.
    static Tokenizer train(const std::vector<std::string>& texts, const TokenizerOptions& options,
                           const std::string& directory);
    // `path` is a tokenizer.model file, or a directory that holds one, or a Hugging Face
    // model folder (or its tokenizer.json, vocab.txt or sentencepiece.bpe.model). A folder is
    // read by the first of tokenizer.json, vocab.txt, sentencepiece.bpe.model and
    // tokenizer.model that it holds. When the folder also holds the model's config.json, its
    // vocab_size must cover every id the tokenizer gives.
    static Tokenizer load(const std::string& path);

    // Ids [B, T] and mask [B, T]: T is the longest text's token count, at most max_length.
    // SentencePiece models trained by nce: longer texts keep their first max_length tokens, and
    // every text must give at least one token (an empty text throws: a row with no token
    // cannot be pooled). Pretrained kinds, as Hugging Face truncates: the text's pieces are
    // cut to max_length minus the special tokens, then the special tokens go around them (an
    // empty text gives the special tokens alone).
    EncodedBatch encode(const std::vector<std::string>& texts, int64_t max_length) const;
    // One text's ids, unpadded and untruncated, with the special tokens of a pretrained kind.
    std::vector<int64_t> encode_ids(const std::string& text) const;
    std::string decode(const std::vector<int64_t>& ids) const;
    // One text's pieces with where each came from: piece i is bytes [begin[i], end[i]) of
    // `text` (SentencePiece's own alignment; a piece of inserted whitespace has begin == end).
    struct PiecesWithOffsets {
        std::vector<int64_t> ids;
        std::vector<int64_t> begin;
        std::vector<int64_t> end;
    };
    PiecesWithOffsets encode_with_offsets(const std::string& text) const;

    // How many special tokens encode_ids puts before and after a text's own pieces ([CLS] and
    // [SEP] of a BERT: 1 and 1; nce's own SentencePiece models: none). encode_with_offsets
    // gives them too, covering no bytes.
    struct SpecialTokens {
        int64_t before = 0;
        int64_t after = 0;
    };
    SpecialTokens special_tokens() const;

    TokenizerKind kind() const;
    // The number of ids: every id encode gives is below it.
    int64_t vocab_size() const;
    // The id that fills padding; 0 when the model (trained elsewhere) has no <pad> piece,
    // which is harmless because the mask marks those positions.
    int64_t pad_id() const;
    int64_t unknown_id() const;
    // Whether texts are rewritten as identifier words first (TokenizerOptions::identifier_words).
    bool reads_identifier_words() const { return identifier_words_; }
    // Where the model was loaded from or saved to.
    const std::string& model_path() const { return model_path_; }

private:
    Tokenizer(std::shared_ptr<sentencepiece::SentencePieceProcessor> processor, std::string model_path);
    Tokenizer(std::shared_ptr<const PretrainedTokenizer> pretrained, std::string model_path);
    static Tokenizer load_sentencepiece(const std::string& path);

    std::shared_ptr<sentencepiece::SentencePieceProcessor> processor_;  // trained by nce
    std::shared_ptr<const PretrainedTokenizer> pretrained_;             // or from a model folder
    std::string model_path_;
    bool identifier_words_ = false;
};

}  // namespace nce::data
