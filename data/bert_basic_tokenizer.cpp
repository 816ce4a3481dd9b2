#include "data/bert_basic_tokenizer.h"

namespace nce::data {
namespace {

// \t \n \r are control characters that BERT counts as whitespace.
bool is_bert_whitespace(char32_t c) { return c == '\t' || c == '\n' || c == '\r' || is_white_space(c); }

bool is_bert_control(char32_t c) {
    if (c == '\t' || c == '\n' || c == '\r') return false;
    return is_control_format_or_private(c);
}

bool is_ascii_punctuation(char32_t c) {
    return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) ||
           (c >= 0x7B && c <= 0x7E);
}

bool is_bert_punctuation(char32_t c) { return is_ascii_punctuation(c) || is_punctuation(c); }

AlignedText bert_clean_text(const AlignedText& text) {
    AlignedText out;
    for (size_t i = 0; i < text.size(); ++i) {
        const char32_t c = text.chars[i];
        if (c == 0 || c == 0xFFFD || is_bert_control(c)) continue;
        out.push_back(is_bert_whitespace(c) ? U' ' : c, text.begin[i], text.end[i]);
    }
    return out;
}

// The spaces around an ideograph come from it: they cover its bytes too.
AlignedText space_out_cjk(const AlignedText& text) {
    AlignedText out;
    for (size_t i = 0; i < text.size(); ++i) {
        const char32_t c = text.chars[i];
        if (is_cjk_ideograph(c)) out.push_back(U' ', text.begin[i], text.end[i]);
        out.push_back(c, text.begin[i], text.end[i]);
        if (is_cjk_ideograph(c)) out.push_back(U' ', text.begin[i], text.end[i]);
    }
    return out;
}

AlignedText strip_nonspacing_marks(const AlignedText& text) {
    AlignedText decomposed = canonical_decomposition(text), out;
    for (size_t i = 0; i < decomposed.size(); ++i)
        if (!is_nonspacing_mark(decomposed.chars[i]))
            out.push_back(decomposed.chars[i], decomposed.begin[i], decomposed.end[i]);
    return out;
}

AlignedText lowercase_each_character(const AlignedText& text) {
    AlignedText out;
    for (size_t i = 0; i < text.size(); ++i)
        for (char32_t lower : full_lowercase(text.chars[i])) out.push_back(lower, text.begin[i], text.end[i]);
    return out;
}

}  // namespace

bool is_cjk_ideograph(char32_t c) {
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
           (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

AlignedText bert_normalize(const AlignedText& text, const BertNormalizerOptions& options) {
    AlignedText out = options.clean_text ? bert_clean_text(text) : text;
    if (options.handle_chinese_chars) out = space_out_cjk(out);
    if (options.strip_accents.value_or(options.lowercase)) out = strip_nonspacing_marks(out);
    if (options.lowercase) out = lowercase_each_character(out);
    return out;
}

std::vector<AlignedText> bert_pre_tokenize(const AlignedText& normalized) {
    std::vector<AlignedText> words;
    size_t word_start = 0;
    auto close_word = [&](size_t stop) {
        if (stop > word_start) words.push_back(normalized.slice(word_start, stop));
    };
    for (size_t i = 0; i < normalized.size(); ++i) {
        const char32_t c = normalized.chars[i];
        if (is_white_space(c)) {
            close_word(i);
            word_start = i + 1;
        } else if (is_bert_punctuation(c)) {
            close_word(i);
            words.push_back(normalized.slice(i, i + 1));
            word_start = i + 1;
        }
    }
    close_word(normalized.size());
    return words;
}

}  // namespace nce::data
