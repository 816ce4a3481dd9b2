// Reading a pairs file (data/pairs_reader.h), its shared parts: the text helpers of its
// messages, one row's cells whatever the format, and why a row is bad. Only the pairs reader's
// own files include this.
#pragma once
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "data/pairs_reader.h"
#include "data/reader_support.h"
#include "data/text_cleaning.h"

namespace nce::data::pairs_detail {

using nlohmann::json;

inline constexpr std::string_view kUtf8Bom = "\xEF\xBB\xBF";
inline constexpr const char* kAllowedColumns =
    "anchor, positive, negative or negative_1 .. negative_K (numbered from 1), score, query_id";

// A score written as text longer than this is not a number anyone means (and keeps strtod's
// work bounded).
inline constexpr size_t kMaxScoreTextBytes = 100;

inline bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v';
}

inline bool is_blank(std::string_view text) {
    return std::all_of(text.begin(), text.end(), [](char c) { return is_space(c); });
}

inline std::string_view trim(std::string_view text) {
    while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
    while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
    return text;
}

inline std::string lowercase(std::string text) {
    for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return text;
}

// `text` for a one-line message: at most `max_code_points` code points (looking at no more
// than the bytes those can take, so that showing a field of megabytes costs nothing), cut
// before any invalid UTF-8, control characters escaped.
inline std::string shown(std::string_view text, size_t max_code_points = 40) {
    std::string_view prefix = text.substr(0, 4 * max_code_points + 4);
    size_t invalid = find_invalid_utf8(prefix);
    bool cut = prefix.size() < text.size();
    if (invalid != std::string_view::npos) {
        prefix = prefix.substr(0, invalid);
        cut = true;
    }
    std::string valid = truncate_utf8(prefix, max_code_points);
    if (cut && valid.size() == prefix.size()) valid += "...";
    std::string out;
    for (char c : valid) {
        if (c == '\n') out += "\\n";
        else if (c == '\r') out += "\\r";
        else if (c == '\t') out += "\\t";
        else if (static_cast<unsigned char>(c) < 0x20) out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
        else out += c;
    }
    return out;
}

// The part of a nlohmann exception's what() after "[json.exception.parse_error.101] ",
// shortened (the last token read can be a whole unterminated string).
inline std::string json_error_detail(const std::string& what) {
    std::string_view detail = what;
    size_t bracket = detail.find("] ");
    if (bracket != std::string_view::npos) detail.remove_prefix(bracket + 2);
    return shown(detail, 160);
}

struct Cell {
    enum class Kind { Missing, Null, Bool, Integer, Float, String, Array, Object };
    Kind kind = Kind::Missing;
    std::string text;  // String: the text; Integer: its decimal form
    double number = 0;  // Integer, Float
};

inline const char* kind_name(Cell::Kind kind) {
    switch (kind) {
        case Cell::Kind::Missing: return "missing";
        case Cell::Kind::Null: return "null";
        case Cell::Kind::Bool: return "a boolean";
        case Cell::Kind::Integer:
        case Cell::Kind::Float: return "a number";
        case Cell::Kind::String: return "a string";
        case Cell::Kind::Array: return "an array";
        case Cell::Kind::Object: return "an object";
    }
    return "?";
}

// Why a row cannot be used: `reason` is what ReadReport::skipped counts, `detail` the line's
// own story (with the fix).
struct BadRow {
    std::string reason;
    std::string detail;
};

}  // namespace nce::data::pairs_detail
