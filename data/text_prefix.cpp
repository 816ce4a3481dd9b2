#include "data/text_prefix.h"

#include <algorithm>
#include <limits>

namespace nce::data {
namespace {

bool is_ascii_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }
bool is_continuation_byte(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

}  // namespace

std::string_view prefix_for_tokens(std::string_view text, int64_t max_tokens) {
    // The budget, saturating: a max_tokens near 2^63 keeps the whole text.
    const int64_t most = std::numeric_limits<int64_t>::max() / kMostBytesPerToken - 2;
    const int64_t budget = max_tokens >= most ? std::numeric_limits<int64_t>::max()
                                              : (std::max<int64_t>(max_tokens, 0) + 2) * kMostBytesPerToken;
    int64_t counted = 0;
    size_t at = 0;
    while (at < text.size()) {
        if (is_ascii_space(text[at])) {  // a run of whitespace counts once
            while (at < text.size() && is_ascii_space(text[at])) ++at;
            ++counted;
        } else {
            ++at;
            ++counted;
        }
        if (counted >= budget) break;
    }
    while (at < text.size() && at > 0 && is_continuation_byte(text[at])) --at;  // not inside a character
    return text.substr(0, at);
}

}  // namespace nce::data
