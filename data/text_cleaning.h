// Turning source text into clean, valid UTF-8: HTML tags stripped, XML/HTML entities decoded,
// whitespace collapsed; and the UTF-8 checks and offsets the readers need.
//
// StackExchange bodies are HTML inside an XML attribute, so they pass through two layers:
//   attribute value --decode_xml_entities--> HTML --clean_html--> plain text
// where clean_html = strip tags, then decode HTML entities, then collapse whitespace. Tags go
// before entities so that an escaped "&lt;b&gt;" written by the author stays the text "<b>".
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace nce::data {

// ---- UTF-8 ---------------------------------------------------------------------------------

// Byte offset where the first invalid UTF-8 sequence starts (a stray continuation byte, a
// sequence cut short, an overlong form, a surrogate U+D800..U+DFFF, a code point above
// U+10FFFF), or std::string_view::npos when all of `text` is valid.
size_t find_invalid_utf8(std::string_view text);
inline bool is_valid_utf8(std::string_view text) { return find_invalid_utf8(text) == std::string_view::npos; }

// Appends the UTF-8 encoding of `code_point`; an invalid one (a surrogate, above U+10FFFF)
// becomes U+FFFD, the replacement character.
void append_utf8(std::string& out, uint32_t code_point);

// The byte offset where code point number `code_point_index` starts in valid UTF-8 `text`
// (text.size() for the index just past the end), or npos when the text is shorter than that.
// SQuAD-style `answer_start` counts code points; std::string indexes bytes.
size_t byte_offset_of_code_point(std::string_view text, int64_t code_point_index);

// byte_offset_of_code_point for many look-ups in one text (every answer of a KorQuAD
// paragraph): counting from the start each time would scan the text once per look-up. Keeps
// the byte offset of every 64th code point and counts at most 63 more from there. Views
// `text`: keep it alive while this is used.
class CodePointOffsets {
public:
    explicit CodePointOffsets(std::string_view text);
    // The same as byte_offset_of_code_point(text, code_point_index).
    size_t byte_offset(int64_t code_point_index) const;

private:
    static constexpr int64_t kStride = 64;
    std::string_view text_;
    std::vector<size_t> checkpoints_;  // checkpoints_[k]: where code point k * kStride starts
    int64_t code_points_ = 0;
};

// The longest prefix of valid UTF-8 `text` with at most `max_code_points` code points, with
// "..." appended when something was cut. Never splits a multi-byte character.
std::string truncate_utf8(std::string_view text, size_t max_code_points);

// ---- Entities, tags, whitespace ------------------------------------------------------------

// The five XML entities (&amp; &lt; &gt; &quot; &apos;) and numeric references (&#10; &#xA;).
// Anything else after '&' is kept as written.
std::string decode_xml_entities(std::string_view text);

// The XML ones plus the HTML named entities in common use (&nbsp; &copy; &mdash; &eacute; ...).
// Numeric references to 0, surrogates or beyond U+10FFFF become U+FFFD; unknown names and a
// '&' without a closing ';' are kept as written.
std::string decode_html_entities(std::string_view text);

// Removes HTML tags and comments. A block-level tag (p, br, div, li, pre, h1..h6, tr, td, ...)
// becomes a space so that "<p>a</p><p>b</p>" reads "a b"; an inline one (b, i, a, code, ...)
// disappears so that "<b>bold</b>ly" reads "boldly". A '<' that cannot start a tag ("a < b")
// and an unclosed one at the end are kept as text; an unclosed comment runs to the end.
std::string strip_html_tags(std::string_view html);

// Every run of whitespace (ASCII space, tab, newline, carriage return, form feed, vertical
// tab, and U+00A0 no-break space) becomes one space; none at either end.
std::string collapse_whitespace(std::string_view text);

// strip_html_tags, then decode_html_entities, then collapse_whitespace.
std::string clean_html(std::string_view html);

}  // namespace nce::data
