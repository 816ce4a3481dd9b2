// Unicode for the Hugging Face tokenizers (data/bert_basic_tokenizer.h): a text as code
// points that remember where in the original UTF-8 bytes each came from, and the character
// properties BERT's normalizer and pre-tokenizer ask about, all answered by ICU (libicu).
//
//   "Ça va"  ->  chars = {Ç, a, ' ', v, a}      begin = {0, 2, 3, 4, 5}   end = {2, 3, 4, 5, 6}
//   NFD of Ç ->  {C, U+0327}                    both keep begin 0, end 2 (the bytes of Ç)
//
// Every rewrite (decomposition, lower-casing, dropped or inserted characters) keeps each
// new character's source bytes, so a token found in the rewritten text can name the bytes of
// the original it covers.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace nce::data {

struct AlignedText {
    std::u32string chars;
    std::vector<int64_t> begin;  // chars[i] came from bytes [begin[i], end[i]) of the original
    std::vector<int64_t> end;

    size_t size() const { return chars.size(); }
    void push_back(char32_t c, int64_t from, int64_t to) {
        chars.push_back(c);
        begin.push_back(from);
        end.push_back(to);
    }
    // Characters [first, last) with their sources.
    AlignedText slice(size_t first, size_t last) const;
};

// Decodes UTF-8; a byte that starts no valid sequence becomes U+FFFD (as Python's
// errors="replace" would), covering that one byte.
AlignedText decode_utf8(std::string_view text);
void append_utf8(std::string& out, char32_t c);
std::string to_utf8(std::u32string_view chars);

// Unicode's White_Space property (what Rust's char::is_whitespace answers).
bool is_white_space(char32_t c);
// General category Cc, Cf or Co: control, format, private use.
bool is_control_format_or_private(char32_t c);
// General category P* (connector, dash, open, close, initial, final, other punctuation).
bool is_punctuation(char32_t c);
// General category Mn: a non-spacing mark, such as the accent NFD splits from "é".
bool is_nonspacing_mark(char32_t c);
// Canonical decomposition of one character (NFD of it alone): "é" -> "e" U+0301, "한" ->
// the three conjoining jamo ᄒ ᅡ ᆫ; a character without one comes back alone.
std::u32string canonical_decomposition(char32_t c);
// Canonical combining class: 0 for starters, else the class NFD orders marks by.
int combining_class(char32_t c);
// Full lower case of one character, out of context: "A" -> "a", "İ" -> "i" U+0307.
std::u32string full_lowercase(char32_t c);

// NFD of the whole text: each character decomposed, then every run of marks put in
// canonical order (a stable sort by combining class), sources moving with their characters.
AlignedText canonical_decomposition(const AlignedText& text);

}  // namespace nce::data
