#include "data/unicode_text.h"

#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>
#include <unicode/ustring.h>

#include <algorithm>
#include <numeric>

#include "engine/error.h"

namespace nce::data {
namespace {

constexpr char32_t kInvalidUtf8Replacement = 0xFFFD;

// The number of bytes of the UTF-8 sequence starting at `text[i]` and its code point, or 0
// when the bytes there are not a valid, shortest-form sequence.
int decode_one(std::string_view text, size_t i, char32_t& code_point) {
    const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
    const unsigned char lead = byte(i);
    if (lead < 0x80) {
        code_point = lead;
        return 1;
    }
    int length = 0;
    char32_t minimum = 0;
    if ((lead & 0xE0) == 0xC0) length = 2, code_point = lead & 0x1F, minimum = 0x80;
    else if ((lead & 0xF0) == 0xE0) length = 3, code_point = lead & 0x0F, minimum = 0x800;
    else if ((lead & 0xF8) == 0xF0) length = 4, code_point = lead & 0x07, minimum = 0x10000;
    else return 0;
    if (i + length > text.size()) return 0;
    for (int k = 1; k < length; ++k) {
        if ((byte(i + k) & 0xC0) != 0x80) return 0;
        code_point = (code_point << 6) | (byte(i + k) & 0x3F);
    }
    const bool surrogate = code_point >= 0xD800 && code_point <= 0xDFFF;
    if (code_point < minimum || code_point > 0x10FFFF || surrogate) return 0;
    return length;
}

std::u32string to_code_points(const icu::UnicodeString& text) {
    std::u32string chars;
    for (int32_t i = 0; i < text.length(); i = text.moveIndex32(i, 1)) chars.push_back(text.char32At(i));
    return chars;
}

const icu::Normalizer2& nfd() {
    static const icu::Normalizer2* normalizer = [] {
        UErrorCode status = U_ZERO_ERROR;
        const icu::Normalizer2* instance = icu::Normalizer2::getNFDInstance(status);
        NCE_CHECK(U_SUCCESS(status), "unicode: ICU's NFD data does not load ({}); reinstall libicu",
                  u_errorName(status));
        return instance;
    }();
    return *normalizer;
}

int32_t category_mask(char32_t c) { return U_GET_GC_MASK(static_cast<UChar32>(c)); }

}  // namespace

AlignedText AlignedText::slice(size_t first, size_t last) const {
    AlignedText part;
    part.chars = chars.substr(first, last - first);
    part.begin.assign(begin.begin() + first, begin.begin() + last);
    part.end.assign(end.begin() + first, end.begin() + last);
    return part;
}

AlignedText decode_utf8(std::string_view text) {
    AlignedText decoded;
    decoded.chars.reserve(text.size());
    for (size_t i = 0; i < text.size();) {
        char32_t code_point = 0;
        int length = decode_one(text, i, code_point);
        if (length == 0) code_point = kInvalidUtf8Replacement, length = 1;
        decoded.push_back(code_point, static_cast<int64_t>(i), static_cast<int64_t>(i + length));
        i += length;
    }
    return decoded;
}

void append_utf8(std::string& out, char32_t c) {
    if (c < 0x80) {
        out += static_cast<char>(c);
    } else if (c < 0x800) {
        out += static_cast<char>(0xC0 | (c >> 6));
        out += static_cast<char>(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
        out += static_cast<char>(0xE0 | (c >> 12));
        out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (c & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (c >> 18));
        out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (c & 0x3F));
    }
}

std::string to_utf8(std::u32string_view chars) {
    std::string out;
    out.reserve(chars.size());
    for (char32_t c : chars) append_utf8(out, c);
    return out;
}

bool is_white_space(char32_t c) { return u_isUWhiteSpace(static_cast<UChar32>(c)); }

bool is_control_format_or_private(char32_t c) {
    return (category_mask(c) & (U_GC_CC_MASK | U_GC_CF_MASK | U_GC_CO_MASK)) != 0;
}

bool is_punctuation(char32_t c) { return (category_mask(c) & U_GC_P_MASK) != 0; }

bool is_nonspacing_mark(char32_t c) { return (category_mask(c) & U_GC_MN_MASK) != 0; }

std::u32string canonical_decomposition(char32_t c) {
    if (c < 0xC0) return std::u32string(1, c);  // nothing below U+00C0 decomposes
    UErrorCode status = U_ZERO_ERROR;
    icu::UnicodeString decomposed = nfd().normalize(icu::UnicodeString(static_cast<UChar32>(c)), status);
    if (U_FAILURE(status)) return std::u32string(1, c);
    return to_code_points(decomposed);
}

int combining_class(char32_t c) { return u_getCombiningClass(static_cast<UChar32>(c)); }

std::u32string full_lowercase(char32_t c) {
    if (c < 0x80) return std::u32string(1, (c >= 'A' && c <= 'Z') ? c + ('a' - 'A') : c);
    UChar source[2];
    int32_t source_length = 0;
    U16_APPEND_UNSAFE(source, source_length, static_cast<UChar32>(c));
    UChar lowered[8];  // the longest full lower case is 3 UTF-16 units
    UErrorCode status = U_ZERO_ERROR;
    // The root locale (""): no Turkish or Lithuanian rules. One character alone has no
    // context, so the final-sigma rule does not apply: Σ becomes σ.
    const int32_t length = u_strToLower(lowered, 8, source, source_length, "", &status);
    if (U_FAILURE(status)) return std::u32string(1, c);
    return to_code_points(icu::UnicodeString(lowered, length));
}

AlignedText canonical_decomposition(const AlignedText& text) {
    AlignedText out;
    out.chars.reserve(text.size());
    for (size_t i = 0; i < text.size(); ++i)
        for (char32_t part : canonical_decomposition(text.chars[i])) out.push_back(part, text.begin[i], text.end[i]);
    // Canonical ordering: within each run of non-starters, a stable sort by combining class.
    for (size_t start = 0; start < out.size();) {
        if (combining_class(out.chars[start]) == 0) {
            ++start;
            continue;
        }
        size_t stop = start;
        while (stop < out.size() && combining_class(out.chars[stop]) != 0) ++stop;
        if (stop - start > 1) {
            std::vector<size_t> order(stop - start);
            std::iota(order.begin(), order.end(), start);
            std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
                return combining_class(out.chars[a]) < combining_class(out.chars[b]);
            });
            AlignedText run;
            for (size_t k : order) run.push_back(out.chars[k], out.begin[k], out.end[k]);
            for (size_t k = 0; k < run.size(); ++k) {
                out.chars[start + k] = run.chars[k];
                out.begin[start + k] = run.begin[k];
                out.end[start + k] = run.end[k];
            }
        }
        start = stop;
    }
    return out;
}

}  // namespace nce::data
