#include "data/precompiled_charsmap.h"

#include <unicode/brkiter.h>
#include <unicode/unistr.h>

#include <cstring>
#include <memory>

#include "engine/error.h"

namespace nce::data {
namespace {

// A Darts double-array unit: a leaf flag, a label (the byte that leads here) and the offset
// to the children; a leaf's unit holds a value instead.
bool charsmap_unit_has_leaf(uint32_t unit) { return ((unit >> 8) & 1) == 1; }
uint32_t charsmap_unit_value(uint32_t unit) { return unit & ((1u << 31) - 1); }
uint32_t charsmap_unit_label(uint32_t unit) { return unit & ((1u << 31) | 0xFF); }
uint32_t charsmap_unit_offset(uint32_t unit) { return (unit >> 10) << ((unit & (1u << 9)) >> 6); }

int base64_value(char c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

// The start of each extended grapheme cluster of `text`, by ICU's character break rules, in
// code point indices, with text.size() last.
std::vector<size_t> grapheme_starts(const std::u32string& chars) {
    icu::UnicodeString text;
    for (char32_t c : chars) text.append(static_cast<UChar32>(c));
    UErrorCode status = U_ZERO_ERROR;
    std::unique_ptr<icu::BreakIterator> breaks(icu::BreakIterator::createCharacterInstance(icu::Locale::getRoot(), status));
    NCE_CHECK(U_SUCCESS(status), "unicode: ICU's grapheme rules do not load ({}); reinstall libicu", u_errorName(status));
    breaks->setText(text);
    std::vector<size_t> starts;
    for (int32_t at = breaks->first(); at != icu::BreakIterator::DONE; at = breaks->next())
        starts.push_back(static_cast<size_t>(text.countChar32(0, at)));
    if (starts.empty() || starts.back() != chars.size()) starts.push_back(chars.size());
    return starts;
}

}  // namespace

std::string decode_base64(std::string_view text, const std::string& source) {
    std::string bytes;
    uint32_t buffer = 0;
    int bits = 0;
    for (char c : text) {
        if (c == '=') break;
        const int digit = base64_value(c);
        NCE_CHECK(digit >= 0, "tokenizer load: '{}': precompiled_charsmap is not base64 (byte {:#x}); use the model's own "
                  "tokenizer.json", source, static_cast<unsigned char>(c));
        buffer = (buffer << 6) | static_cast<uint32_t>(digit);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            bytes += static_cast<char>((buffer >> bits) & 0xFF);
        }
    }
    return bytes;
}

PrecompiledCharsmap::PrecompiledCharsmap(std::string blob, const std::string& source) {
    uint32_t trie_bytes = 0;
    NCE_CHECK(blob.size() >= 4, "tokenizer load: '{}': precompiled_charsmap is {} bytes, too short to hold its trie",
              source, blob.size());
    std::memcpy(&trie_bytes, blob.data(), 4);  // little-endian, as x86 and ARM read it
    NCE_CHECK(trie_bytes % 4 == 0 && trie_bytes >= 4 && trie_bytes <= blob.size() - 4,
              "tokenizer load: '{}': precompiled_charsmap's trie of {} bytes does not fit its {} bytes; use the model's "
              "own tokenizer.json", source, trie_bytes, blob.size());
    units_.resize(trie_bytes / 4);
    std::memcpy(units_.data(), blob.data() + 4, trie_bytes);
    strings_ = blob.substr(4 + trie_bytes);
}

std::optional<std::string_view> PrecompiledCharsmap::transform(std::string_view bytes) const {
    size_t node = charsmap_unit_offset(units_[0]);
    for (char c : bytes) {
        const auto byte = static_cast<unsigned char>(c);
        if (byte == 0) break;
        node ^= byte;
        if (node >= units_.size()) return std::nullopt;
        const uint32_t unit = units_[node];
        if (charsmap_unit_label(unit) != byte) return std::nullopt;
        node ^= charsmap_unit_offset(unit);
        if (node >= units_.size()) return std::nullopt;
        if (charsmap_unit_has_leaf(unit)) {  // the first rule found is the shortest: Hugging Face takes it
            const size_t at = charsmap_unit_value(units_[node]);
            if (at >= strings_.size()) return std::nullopt;
            const size_t end = strings_.find('\0', at);
            return std::string_view(strings_).substr(at, (end == std::string::npos ? strings_.size() : end) - at);
        }
    }
    return std::nullopt;
}

AlignedText PrecompiledCharsmap::normalize(const AlignedText& text) const {
    AlignedText out;
    auto replace = [&](std::string_view replacement, int64_t begin, int64_t end) {
        for (char32_t c : decode_utf8(replacement).chars) out.push_back(c, begin, end);
    };
    const std::vector<size_t> starts = grapheme_starts(text.chars);
    for (size_t g = 0; g + 1 < starts.size(); ++g) {
        const size_t first = starts[g], last = starts[g + 1];
        const std::string grapheme = to_utf8(std::u32string_view(text.chars).substr(first, last - first));
        if (grapheme.size() < 6) {
            if (auto replacement = transform(grapheme)) {
                replace(*replacement, text.begin[first], text.end[last - 1]);
                continue;
            }
        }
        for (size_t i = first; i < last; ++i) {
            std::string one;
            append_utf8(one, text.chars[i]);
            if (auto replacement = transform(one)) replace(*replacement, text.begin[i], text.end[i]);
            else out.push_back(text.chars[i], text.begin[i], text.end[i]);
        }
    }
    return out;
}

}  // namespace nce::data
