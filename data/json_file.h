// Reading a whole JSON file (KorQuAD, ranked-QA) into nlohmann::json, with every way it can
// be bad (missing, empty, invalid UTF-8, truncated, not JSON, nested deeper than 64 levels)
// reported as one line naming the file and the position.
#pragma once
#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>

#include "data/reader_support.h"
#include "data/text_cleaning.h"
#include "engine/json_nesting.h"

namespace nce::data {

inline nlohmann::json read_json_file(const std::string& path) {
    std::string text = read_source_file(path);
    size_t invalid = find_invalid_utf8(text);
    if (invalid != std::string::npos) {
        auto line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(invalid), '\n');
        fail("{}: invalid UTF-8 at byte {} (line {}); the file must be UTF-8 text", path, invalid, line);
    }
    check_json_nesting(text, path);  // before the parser walks (and later code recurses) level by level
    try {
        return nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& error) {
        // A parse_error, or an out_of_range for a number beyond a double (1e999). error.what()
        // reads "[json.exception.parse_error.101] parse error at line 1, column 9: syntax error
        // ... last read: '...'" or "[json.exception.out_of_range.406] number overflow parsing
        // '1e999'"; keep what follows the bracket, at most 200 code points (the last token read
        // can be a whole unterminated string, a number megabytes of digits long).
        std::string detail = error.what();
        size_t bracket = detail.find("] ");
        if (bracket != std::string::npos) detail = detail.substr(bracket + 2);
        std::replace(detail.begin(), detail.end(), '\n', ' ');
        const auto* parse_error = dynamic_cast<const nlohmann::json::parse_error*>(&error);
        bool truncated = parse_error && parse_error->byte >= text.size();
        fail("{}: not valid JSON: {}{}", path, truncate_utf8(detail, 200),
             truncated ? "; the file ends early (truncated?)" : "");
    }
}

}  // namespace nce::data
