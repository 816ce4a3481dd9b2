#include "engine/message_text.h"

#include <fmt/format.h>

namespace nce {

namespace {

// The first `max_bytes` bytes of `text`, ending before any UTF-8 character they would split.
std::string_view utf8_prefix(std::string_view text, size_t max_bytes) {
    if (text.size() <= max_bytes) return text;
    size_t end = max_bytes;
    while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;  // text[end] continues a character
    return text.substr(0, end);
}

// Control bytes (below 0x20, and DEL) as \xNN; every other byte as it is.
std::string escaped_controls(std::string_view text) {
    std::string shown;
    shown.reserve(text.size());
    for (char c : text) {
        const auto byte = static_cast<unsigned char>(c);
        if (byte < 0x20 || byte == 0x7f)
            shown += fmt::format("\\x{:02x}", byte);
        else
            shown += c;
    }
    return shown;
}

}  // namespace

std::string quoted_for_message(std::string_view text, size_t max_bytes) {
    const std::string_view kept = utf8_prefix(text, max_bytes);
    return "'" + escaped_controls(kept) + (kept.size() < text.size() ? "...'" : "'");
}

std::string one_line_message(std::string_view message, size_t max_bytes) {
    const std::string_view kept = utf8_prefix(message, max_bytes);
    std::string line = escaped_controls(kept);
    if (kept.size() < message.size()) line += fmt::format("... ({} more bytes)", message.size() - kept.size());
    return line;
}

}  // namespace nce
