// BERT's WordPiece tokenizer, read from a Hugging Face model folder, giving the ids Hugging
// Face's tokenizers gives:
//
//   added tokens ([CLS], [MASK], ...) are cut out of the raw text first (data/added_tokens.h)
//   -> BERT's normalizer and pre-tokenizer make words (data/bert_basic_tokenizer.h)
//   -> each word is split greedily, longest piece first, later pieces marked "##":
//        "unaffable" -> "un" "##aff" "##able";  no split at all, or over 100 characters -> [UNK]
//   -> the post-processor's special tokens go around the whole: [CLS] ... [SEP]
//
// The folder holds tokenizer.json (model.type "WordPiece"), or, from older models, vocab.txt
// (one piece a line, the line number its id) with tokenizer_config.json's do_lower_case,
// strip_accents and tokenize_chinese_chars.
#pragma once
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "data/added_tokens.h"
#include "data/bert_basic_tokenizer.h"
#include "data/pretrained_tokenizer.h"

namespace nce::data {

class WordPieceTokenizer : public PretrainedTokenizer {
public:
    static std::shared_ptr<WordPieceTokenizer> from_tokenizer_json(const std::filesystem::path& path);
    static std::shared_ptr<WordPieceTokenizer> from_vocab_txt(const std::filesystem::path& directory);

    TokenizerKind kind() const override { return TokenizerKind::WordPiece; }
    ContentPieces encode_content(const std::string& text) const override;
    // Hugging Face's WordPiece decoder: pieces joined by spaces, "##" pieces glued to the one
    // before, then the spaces before . , ! ? and English contractions removed.
    std::string decode(const std::vector<int64_t>& ids) const override;
    int64_t vocab_size() const override { return static_cast<int64_t>(pieces_.size()); }
    int64_t pad_id() const override { return pad_id_; }
    int64_t unknown_id() const override { return unknown_id_; }

private:
    WordPieceTokenizer() = default;
    // Adds piece `id`, naming `source` in the error when the piece or the id is there already.
    void add_piece(const std::string& piece, int64_t id, const std::string& source);
    void finish(const std::string& source, const std::string& unknown_token, const std::string& pad_token);
    void split_word(const AlignedText& word, ContentPieces& out) const;

    std::unordered_map<std::string, int64_t> ids_;
    std::vector<std::string> pieces_;  // id -> piece ("" where no piece has that id)
    std::vector<AddedToken> raw_added_tokens_, normalized_added_tokens_;
    std::optional<BertNormalizerOptions> normalizer_;  // unset: the text is used as it is
    std::string continuing_prefix_ = "##";
    int64_t max_word_chars_ = 100;
    int64_t unknown_id_ = 0;
    int64_t pad_id_ = 0;
};

}  // namespace nce::data
