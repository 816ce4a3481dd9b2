// SentencePiece's normalization rules as a Hugging Face tokenizer.json carries them
// ("Precompiled" normalizer, XLM-RoBERTa's NFKC-like rules): one binary blob, base64 in the
// JSON, laid out as
//
//   [u32 n: the trie's size in bytes]  [trie: n/4 u32 units, a Darts double array]  [strings]
//
// The trie maps UTF-8 byte strings to an offset into `strings`, where the replacement sits,
// ended by a NUL. Hugging Face applies it one grapheme cluster at a time: a cluster shorter
// than 6 bytes whose bytes start with a rule becomes that rule's replacement (the shortest
// rule that matches); otherwise each character is replaced by its own rule, or kept.
//
//   "ｶ" -> "カ"     "①" -> "1"     "\u00a0" -> " "     "A" -> "A" (no rule)
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "data/unicode_text.h"

namespace nce::data {

class PrecompiledCharsmap {
public:
    // `blob` is the decoded bytes; a malformed one throws naming `source`.
    PrecompiledCharsmap(std::string blob, const std::string& source);

    // The replacement of the shortest rule that `bytes` starts with, if any.
    std::optional<std::string_view> transform(std::string_view bytes) const;
    // The whole text normalized, each new character keeping its grapheme's (or character's) sources.
    AlignedText normalize(const AlignedText& text) const;

private:
    std::vector<uint32_t> units_;
    std::string strings_;
};

// Standard base64 (with padding) to bytes; throws naming `source` on a bad character.
std::string decode_base64(std::string_view text, const std::string& source);

}  // namespace nce::data
