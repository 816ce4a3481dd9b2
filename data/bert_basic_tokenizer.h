// BERT's basic tokenizer: the normalizer and the pre-tokenizer that run before WordPiece,
// as Hugging Face's tokenizers defines them (BertNormalizer, BertPreTokenizer).
//
// Normalize, in this order, each step as the model's files say:
//   clean_text            drop NUL, U+FFFD and control/format/private-use characters (not
//                         \t \n \r); every White_Space character becomes ' '
//   handle_chinese_chars  put ' ' on both sides of each CJK ideograph, so each is a word
//   strip_accents         NFD, then drop non-spacing marks (Mn): "Café" -> "Cafe", and
//                         Hangul syllables become their jamo. Unset: follows lowercase
//   lowercase             full lower case, one character at a time
// Pre-tokenize: split at White_Space (dropped), then every punctuation character (ASCII
// punctuation or category P*) is a word of its own:
//
//   "Hello, 世界!  Café"  ->  "hello" "," "世" "界" "!" "cafe"      (lowercase: true)
#pragma once
#include <optional>
#include <vector>

#include "data/unicode_text.h"

namespace nce::data {

struct BertNormalizerOptions {
    bool clean_text = true;
    bool handle_chinese_chars = true;
    std::optional<bool> strip_accents;  // unset: strip when lower-casing
    bool lowercase = true;
};

// The CJK Unified Ideographs blocks BERT splits one by one (not Hangul, Hiragana, Katakana).
bool is_cjk_ideograph(char32_t c);

AlignedText bert_normalize(const AlignedText& text, const BertNormalizerOptions& options);
// The words of an already normalized text, each with its sources.
std::vector<AlignedText> bert_pre_tokenize(const AlignedText& normalized);

}  // namespace nce::data
