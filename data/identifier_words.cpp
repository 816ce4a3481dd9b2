// Names split into lower-case words (see identifier_words.h).
#include "data/identifier_words.h"

namespace nce::data {
namespace {

bool is_lower(char c) { return c >= 'a' && c <= 'z'; }
bool is_upper(char c) { return c >= 'A' && c <= 'Z'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
// ASCII punctuation: printable, not a letter, digit or space ('_' is handled on its own).
bool is_punctuation(char c) { return c > ' ' && c < 127 && !is_lower(c) && !is_upper(c) && !is_digit(c); }

}  // namespace

IdentifierWords identifier_words(const std::string& text) {
    IdentifierWords words;
    words.text.reserve(text.size() + text.size() / 4);
    words.source.reserve(text.size() + text.size() / 4);
    words.added.reserve(text.size() + text.size() / 4);
    auto emit = [&](char c, size_t from) {
        words.text.push_back(c);
        words.source.push_back(static_cast<int64_t>(from));
        words.added.push_back(false);
    };
    auto add_space = [&](size_t by) {
        emit(' ', by);
        words.added.back() = true;
    };
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        const char before = i > 0 ? text[i - 1] : ' ';
        const char after = i + 1 < text.size() ? text[i + 1] : ' ';
        if (c == '_') {
            add_space(i), emit('_', i), add_space(i + 1);
            continue;
        }
        if (is_upper(c)) {
            // The plural s of an acronym ("IPAs", "URLs") is no word's start.
            const bool plural = after == 's' && !(i + 2 < text.size() && is_lower(text[i + 2]));
            if (is_lower(before) || is_digit(before) || (is_upper(before) && is_lower(after) && !plural)) add_space(i);
            emit(static_cast<char>(c - 'A' + 'a'), i);
            continue;
        }
        if (is_punctuation(c)) {
            add_space(i), emit(c, i), add_space(i + 1);
            continue;
        }
        emit(c, i);
    }
    return words;
}

}  // namespace nce::data
