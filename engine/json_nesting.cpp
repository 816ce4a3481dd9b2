#include "engine/json_nesting.h"

#include "engine/error.h"

namespace nce {

std::size_t find_excess_json_nesting(std::string_view text, int max_depth) {
    int depth = 0;
    bool in_string = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        char c = text[i];
        if (in_string) {
            if (c == '\\')
                ++i;  // the escaped byte ('"' or '\\' among them) cannot end the string
            else if (c == '"')
                in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            if (++depth > max_depth) return i;
        } else if ((c == ']' || c == '}') && depth > 0) {
            --depth;  // an unmatched closer is the parser's error to report, not a level
        }
    }
    return std::string_view::npos;
}

void check_json_nesting(std::string_view text, const std::string& what) {
    std::size_t at = find_excess_json_nesting(text);
    NCE_CHECK(at == std::string_view::npos,
              "{}: JSON nesting exceeds {} levels at byte {} (nce reads arrays and objects at most {} deep)", what,
              kMaxJsonNesting, at, kMaxJsonNesting);
}

}  // namespace nce
