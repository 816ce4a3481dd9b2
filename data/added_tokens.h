// A Hugging Face tokenizer's added tokens ([CLS], [MASK], <s>, ...): found in a text before
// the model sees it and turned straight into their ids, as Hugging Face's tokenizers does.
// Tokens marked `normalized: false` are looked for in the raw text, the others in the
// normalized text. Matching is leftmost, then longest; `lstrip`/`rstrip` take the
// whitespace on that side into the token.
//
//   "a [MASK] b"  ->  {"a "} {[MASK] = 103} {" b"}
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/unicode_text.h"

namespace nce::data {

struct AddedToken {
    std::u32string content;
    int64_t id = 0;
    bool normalized = false;
    bool lstrip = false;
    bool rstrip = false;
};

struct TextSegment {
    AlignedText text;  // a stretch of text for the model (when id < 0)
    int64_t id = -1;   // or one added token
};

// The text cut at every match of `tokens`: text segments (never empty) and tokens, in order.
std::vector<TextSegment> split_at_added_tokens(const AlignedText& text, const std::vector<AddedToken>& tokens);

}  // namespace nce::data
