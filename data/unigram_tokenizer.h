// A Unigram tokenizer read from a Hugging Face tokenizer.json: XLM-RoBERTa's, as the
// multilingual sentence-transformers models (multilingual-e5, paraphrase-multilingual-MiniLM)
// ship it, giving the ids Hugging Face's tokenizers gives:
//
//   added tokens (<s>, </s>, <mask>, ...) cut out of the raw text (data/added_tokens.h)
//   -> normalizer: SentencePiece's rules ("Precompiled", data/precompiled_charsmap.h), then
//      runs of 2+ spaces become one ("Replace" of the regex " {2,}")
//   -> pre-tokenizer "Metaspace": ' ' becomes '▁', '▁' put first, a word starts at each '▁'
//        "Hello  world" -> "▁Hello" "▁world"
//   -> each word split by Viterbi over the pieces' log-probabilities: the split whose scores
//      sum highest. A character no piece starts with is <unk>, scored the lowest piece's
//      score - 10; neighbouring <unk>s become one.
//   -> the post-processor's special tokens around the whole: <s> ... </s>
#pragma once
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "data/added_tokens.h"
#include "data/precompiled_charsmap.h"
#include "data/pretrained_tokenizer.h"

namespace nce::data {

class UnigramTokenizer : public PretrainedTokenizer {
public:
    static std::shared_ptr<UnigramTokenizer> from_tokenizer_json(const std::filesystem::path& path);

    TokenizerKind kind() const override { return TokenizerKind::Unigram; }
    ContentPieces encode_content(const std::string& text) const override;
    // Hugging Face's Metaspace decoder: pieces joined, '▁' read as ' ', the first one dropped.
    std::string decode(const std::vector<int64_t>& ids) const override;
    int64_t vocab_size() const override { return static_cast<int64_t>(pieces_.size()); }
    int64_t pad_id() const override { return pad_id_; }
    int64_t unknown_id() const override { return unknown_id_; }

private:
    UnigramTokenizer() = default;
    void add_to_trie(const std::string& piece, int64_t id);
    void split_word(const AlignedText& word, ContentPieces& out) const;

    std::vector<std::string> pieces_;
    std::vector<double> scores_;
    // The pieces as a byte trie: node 0 is the root; the edge from node n by byte b is
    // trie_edges_[n << 8 | b]; trie_piece_[n] is the piece that ends at node n, or -1.
    std::unordered_map<uint64_t, int32_t> trie_edges_;
    std::vector<int64_t> trie_piece_;
    std::vector<AddedToken> raw_added_tokens_;
    std::optional<PrecompiledCharsmap> charsmap_;
    bool collapse_spaces_ = false;
    bool prepend_space_ = true;
    double unknown_score_ = 0;
    int64_t unknown_id_ = 0;
    int64_t pad_id_ = 0;
};

}  // namespace nce::data
