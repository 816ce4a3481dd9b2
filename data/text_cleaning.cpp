#include "data/text_cleaning.h"

#include <cctype>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace nce::data {
namespace {

constexpr uint32_t kReplacementCharacter = 0xFFFD;

bool is_continuation_byte(unsigned char byte) { return (byte & 0xC0) == 0x80; }

// ---- UTF-8 sequences -----------------------------------------------------------------------
//
//   bytes  first byte   second byte (narrowed to exclude overlong forms, surrogates, > U+10FFFF)
//   1      00..7F
//   2      C2..DF       80..BF
//   3      E0           A0..BF          (E0 80..9F would be overlong)
//          E1..EC       80..BF
//          ED           80..9F          (ED A0..BF would be a surrogate)
//          EE..EF       80..BF
//   4      F0           90..BF          (F0 80..8F would be overlong)
//          F1..F3       80..BF
//          F4           80..8F          (F4 90.. would be above U+10FFFF)
// Every byte after the second is 80..BF.
struct SequenceRule {
    int length = 0;  // 0: this byte cannot start a sequence
    unsigned char second_low = 0x80, second_high = 0xBF;
};

SequenceRule rule_for_first_byte(unsigned char byte) {
    if (byte <= 0x7F) return {1};
    if (byte >= 0xC2 && byte <= 0xDF) return {2};
    if (byte == 0xE0) return {3, 0xA0, 0xBF};
    if (byte == 0xED) return {3, 0x80, 0x9F};
    if (byte >= 0xE1 && byte <= 0xEF) return {3};
    if (byte == 0xF0) return {4, 0x90, 0xBF};
    if (byte >= 0xF1 && byte <= 0xF3) return {4};
    if (byte == 0xF4) return {4, 0x80, 0x8F};
    return {0};
}

// ---- Entities ------------------------------------------------------------------------------

const std::unordered_map<std::string_view, uint32_t>& xml_entities() {
    static const std::unordered_map<std::string_view, uint32_t> table{
        {"amp", '&'}, {"lt", '<'}, {"gt", '>'}, {"quot", '"'}, {"apos", '\''}};
    return table;
}

// HTML names are case-sensitive: &Eacute; is É, &eacute; is é.
const std::unordered_map<std::string_view, uint32_t>& html_entities() {
    static const std::unordered_map<std::string_view, uint32_t> table{
        {"amp", '&'},       {"lt", '<'},       {"gt", '>'},       {"quot", '"'},      {"apos", '\''},
        {"nbsp", 0xA0},     {"ensp", 0x2002},  {"emsp", 0x2003},  {"thinsp", 0x2009}, {"shy", 0xAD},
        {"zwnj", 0x200C},   {"zwj", 0x200D},   {"copy", 0xA9},    {"reg", 0xAE},      {"trade", 0x2122},
        {"hellip", 0x2026}, {"mdash", 0x2014}, {"ndash", 0x2013}, {"minus", 0x2212},  {"lsquo", 0x2018},
        {"rsquo", 0x2019},  {"sbquo", 0x201A}, {"ldquo", 0x201C}, {"rdquo", 0x201D},  {"bdquo", 0x201E},
        {"laquo", 0xAB},    {"raquo", 0xBB},   {"prime", 0x2032}, {"Prime", 0x2033},  {"bull", 0x2022},
        {"middot", 0xB7},   {"deg", 0xB0},     {"plusmn", 0xB1},  {"times", 0xD7},    {"divide", 0xF7},
        {"le", 0x2264},     {"ge", 0x2265},    {"ne", 0x2260},    {"asymp", 0x2248},  {"infin", 0x221E},
        {"frac12", 0xBD},   {"frac14", 0xBC},  {"frac34", 0xBE},  {"sup2", 0xB2},     {"sup3", 0xB3},
        {"micro", 0xB5},    {"larr", 0x2190},  {"uarr", 0x2191},  {"rarr", 0x2192},   {"darr", 0x2193},
        {"harr", 0x2194},   {"euro", 0x20AC},  {"pound", 0xA3},   {"yen", 0xA5},      {"cent", 0xA2},
        {"sect", 0xA7},     {"para", 0xB6},    {"iexcl", 0xA1},   {"iquest", 0xBF},   {"agrave", 0xE0},
        {"aacute", 0xE1},   {"acirc", 0xE2},   {"atilde", 0xE3},  {"auml", 0xE4},     {"aring", 0xE5},
        {"aelig", 0xE6},    {"ccedil", 0xE7},  {"egrave", 0xE8},  {"eacute", 0xE9},   {"ecirc", 0xEA},
        {"euml", 0xEB},     {"igrave", 0xEC},  {"iacute", 0xED},  {"icirc", 0xEE},    {"iuml", 0xEF},
        {"ntilde", 0xF1},   {"ograve", 0xF2},  {"oacute", 0xF3},  {"ocirc", 0xF4},    {"otilde", 0xF5},
        {"ouml", 0xF6},     {"oslash", 0xF8},  {"ugrave", 0xF9},  {"uacute", 0xFA},   {"ucirc", 0xFB},
        {"uuml", 0xFC},     {"yacute", 0xFD},  {"yuml", 0xFF},    {"szlig", 0xDF},    {"Agrave", 0xC0},
        {"Aacute", 0xC1},   {"Acirc", 0xC2},   {"Auml", 0xC4},    {"Aring", 0xC5},    {"Ccedil", 0xC7},
        {"Egrave", 0xC8},   {"Eacute", 0xC9},  {"Ecirc", 0xCA},   {"Ntilde", 0xD1},   {"Oacute", 0xD3},
        {"Ouml", 0xD6},     {"Oslash", 0xD8},  {"Uuml", 0xDC},
    };
    return table;
}

// The code point of a numeric reference's body ("#233" or "#xE9"), U+FFFD for one that no
// character has, or -1 when `body` is not a numeric reference at all.
int64_t numeric_reference_value(std::string_view body) {
    if (body.size() < 2 || body[0] != '#') return -1;
    bool hexadecimal = body[1] == 'x' || body[1] == 'X';
    std::string_view digits = body.substr(hexadecimal ? 2 : 1);
    if (digits.empty()) return -1;
    int64_t value = 0;
    for (char digit : digits) {
        int digit_value;
        if (digit >= '0' && digit <= '9')
            digit_value = digit - '0';
        else if (hexadecimal && digit >= 'a' && digit <= 'f')
            digit_value = digit - 'a' + 10;
        else if (hexadecimal && digit >= 'A' && digit <= 'F')
            digit_value = digit - 'A' + 10;
        else
            return -1;
        value = value * (hexadecimal ? 16 : 10) + digit_value;
        if (value > 0x10FFFF) value = 0x110000;  // stays "too large" however many digits follow
    }
    bool has_character = value != 0 && value <= 0x10FFFF && !(value >= 0xD800 && value <= 0xDFFF);
    return has_character ? value : kReplacementCharacter;
}

// One left-to-right pass: "&amp;lt;" decodes to "&lt;", not to "<".
std::string decode_entities(std::string_view text, const std::unordered_map<std::string_view, uint32_t>& names) {
    constexpr size_t kLongestReference = 32;  // "&#x0000000010FFFF;" and every name fit
    std::string out;
    out.reserve(text.size());
    size_t position = 0;
    while (position < text.size()) {
        size_t ampersand = text.find('&', position);
        if (ampersand == std::string_view::npos) {
            out.append(text.substr(position));
            break;
        }
        out.append(text.substr(position, ampersand - position));
        // The ';' is looked for only where a reference could end: searching the rest of the
        // text would rescan it for every '&', quadratic on a megabyte of bare '&'.
        std::string_view after = text.substr(ampersand + 1, kLongestReference);
        size_t semicolon = after.find(';');  // relative to `after`
        if (semicolon != std::string_view::npos) {
            std::string_view body = after.substr(0, semicolon);
            int64_t code_point = numeric_reference_value(body);
            if (code_point < 0) {
                auto named = names.find(body);
                if (named != names.end()) code_point = named->second;
            }
            if (code_point >= 0) {
                append_utf8(out, static_cast<uint32_t>(code_point));
                position = ampersand + 1 + semicolon + 1;
                continue;
            }
        }
        out.push_back('&');  // not a reference we know: keep it as written
        position = ampersand + 1;
    }
    return out;
}

// ---- Tags ----------------------------------------------------------------------------------

bool is_block_level_tag(const std::string& name) {
    static const std::unordered_set<std::string> block_tags{
        "p",  "br", "div", "li", "ul",    "ol", "pre", "blockquote", "h1", "h2",    "h3",    "h4",     "h5",
        "h6", "tr", "td",  "th", "table", "hr", "dl",  "dt",         "dd", "thead", "tbody", "section"};
    return block_tags.count(name) > 0;
}

// Where the tag opened at each '<' of a text closes: the first '>' after it that is not inside
// a quoted attribute value (which may hold '>'), or npos when the tag never closes.
//
// Searching forward from each '<' would scan to the end of the text for every '<' whose tag
// never closes: quadratic, minutes for a body of 400,000 unclosed tags. One pass from the
// right answers every '<' at once. Let close(i) be the answer of a search that starts at
// position i outside quotes (a tag opened at p closes at close(p + 1)); then
//   close(i) = i                  if text[i] is '>'
//            = close(j + 1)       if text[i] is a quote and j the next same quote after it
//            = npos               if text[i] is a quote that is never matched
//            = close(i + 1)       otherwise
// The right-to-left pass keeps close(i + 1), and for each kind of quote close(j + 1) of the
// nearest one to the right (npos while there is none: an unmatched quote never closes).
class TagEnds {
public:
    explicit TagEnds(std::string_view html) {
        size_t close_after = std::string_view::npos;  // close(i + 1)
        size_t close_after_quote[2] = {std::string_view::npos, std::string_view::npos};  // for '"' and '\''
        for (size_t i = html.size(); i-- > 0;) {
            char c = html[i];
            if (c == '<') ends_.push_back({i, close_after});
            size_t close_here = close_after;
            if (c == '>') {
                close_here = i;
            } else if (c == '"' || c == '\'') {
                int kind = c == '"' ? 0 : 1;
                close_here = close_after_quote[kind];
                close_after_quote[kind] = close_after;
            }
            close_after = close_here;
        }
    }

    // The '>' closing the tag opened by the '<' at `open`, or npos. Calls must come in
    // increasing order of `open`: the answers for '<'s passed over are dropped on the way.
    size_t close_of(size_t open) {
        while (!ends_.empty() && ends_.back().open < open) ends_.pop_back();
        return ends_.empty() ? std::string_view::npos : ends_.back().close;
    }

private:
    struct End {
        size_t open, close;
    };
    std::vector<End> ends_;  // one per '<', the rightmost first
};

// "</Pre class=x>" -> "pre"
std::string tag_name(std::string_view tag) {
    size_t i = 1;  // past '<'
    if (i < tag.size() && tag[i] == '/') ++i;
    std::string name;
    while (i < tag.size() && std::isalnum(static_cast<unsigned char>(tag[i])))
        name.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(tag[i++]))));
    return name;
}

bool is_ascii_whitespace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

}  // namespace

size_t find_invalid_utf8(std::string_view text) {
    size_t position = 0;
    while (position < text.size()) {
        auto first = static_cast<unsigned char>(text[position]);
        SequenceRule rule = rule_for_first_byte(first);
        if (rule.length == 0 || position + rule.length > text.size()) return position;
        if (rule.length > 1) {
            auto second = static_cast<unsigned char>(text[position + 1]);
            if (second < rule.second_low || second > rule.second_high) return position;
            for (int k = 2; k < rule.length; ++k)
                if (!is_continuation_byte(static_cast<unsigned char>(text[position + k]))) return position;
        }
        position += rule.length;
    }
    return std::string_view::npos;
}

void append_utf8(std::string& out, uint32_t code_point) {
    if (code_point > 0x10FFFF || (code_point >= 0xD800 && code_point <= 0xDFFF)) code_point = kReplacementCharacter;
    if (code_point < 0x80) {
        out.push_back(static_cast<char>(code_point));
    } else if (code_point < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (code_point >> 6)));
        out.push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
    } else if (code_point < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (code_point >> 12)));
        out.push_back(static_cast<char>(0x80 | ((code_point >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
    } else {
        out.push_back(static_cast<char>(0xF0 | (code_point >> 18)));
        out.push_back(static_cast<char>(0x80 | ((code_point >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((code_point >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
    }
}

size_t byte_offset_of_code_point(std::string_view text, int64_t code_point_index) {
    if (code_point_index < 0) return std::string_view::npos;
    int64_t code_points_seen = 0;
    for (size_t position = 0; position < text.size(); ++position) {
        if (is_continuation_byte(static_cast<unsigned char>(text[position]))) continue;
        if (code_points_seen == code_point_index) return position;
        ++code_points_seen;
    }
    return code_points_seen == code_point_index ? text.size() : std::string_view::npos;
}

CodePointOffsets::CodePointOffsets(std::string_view text) : text_(text) {
    for (size_t position = 0; position < text.size(); ++position) {
        if (is_continuation_byte(static_cast<unsigned char>(text[position]))) continue;
        if (code_points_ % kStride == 0) checkpoints_.push_back(position);
        ++code_points_;
    }
}

size_t CodePointOffsets::byte_offset(int64_t code_point_index) const {
    if (code_point_index < 0 || code_point_index > code_points_) return std::string_view::npos;
    if (code_point_index == code_points_) return text_.size();
    size_t position = checkpoints_[static_cast<size_t>(code_point_index / kStride)];
    for (int64_t step = 0; step < code_point_index % kStride; ++step) {  // to the start of the next code point
        ++position;
        while (position < text_.size() && is_continuation_byte(static_cast<unsigned char>(text_[position]))) ++position;
    }
    return position;
}

std::string truncate_utf8(std::string_view text, size_t max_code_points) {
    size_t cut = byte_offset_of_code_point(text, static_cast<int64_t>(max_code_points));
    if (cut == std::string_view::npos || cut == text.size()) return std::string(text);
    return std::string(text.substr(0, cut)) + "...";
}

std::string decode_xml_entities(std::string_view text) { return decode_entities(text, xml_entities()); }

std::string decode_html_entities(std::string_view text) { return decode_entities(text, html_entities()); }

std::string strip_html_tags(std::string_view html) {
    TagEnds tag_ends(html);
    std::string out;
    out.reserve(html.size());
    size_t position = 0;
    while (position < html.size()) {
        char c = html[position];
        if (c != '<') {
            out.push_back(c);
            ++position;
            continue;
        }
        if (html.substr(position, 4) == "<!--") {  // a comment, up to "-->"
            size_t end = html.find("-->", position + 4);
            if (end == std::string_view::npos) break;  // unclosed comment: the rest is comment
            position = end + 3;
            continue;
        }
        char next = position + 1 < html.size() ? html[position + 1] : '\0';
        bool can_start_tag =
            std::isalpha(static_cast<unsigned char>(next)) || next == '/' || next == '!' || next == '?';
        size_t end = can_start_tag ? tag_ends.close_of(position) : std::string_view::npos;
        if (end == std::string_view::npos) {  // "a < b", or an unclosed '<': plain text
            out.push_back('<');
            ++position;
            continue;
        }
        if (is_block_level_tag(tag_name(html.substr(position, end - position)))) out.push_back(' ');
        position = end + 1;
    }
    return out;
}

std::string collapse_whitespace(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    bool space_pending = false;
    size_t position = 0;
    while (position < text.size()) {
        bool no_break_space = text.substr(position, 2) == "\xC2\xA0";
        if (no_break_space || is_ascii_whitespace(text[position])) {
            space_pending = true;
            position += no_break_space ? 2 : 1;
            continue;
        }
        if (space_pending && !out.empty()) out.push_back(' ');
        space_pending = false;
        out.push_back(text[position++]);
    }
    return out;
}

std::string clean_html(std::string_view html) {
    return collapse_whitespace(decode_html_entities(strip_html_tags(html)));
}

}  // namespace nce::data
