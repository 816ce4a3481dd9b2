// A depth limit for JSON read from untrusted bytes (safetensors headers, nce_config, the apps'
// --config files, the data readers' JSON). A parser walks nested arrays and objects, and
// some of what follows a parse (dump(), copies, comparisons) recurses once per level, so a
// file of 100,000 '[' would overflow the stack; no file nce reads needs more than a few
// levels. Every reader of untrusted JSON runs the text through this scanner before parsing.
// It lives in the engine, which knows no JSON library, so that nn/ and data/ can share it.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace nce {

// The deepest nesting of arrays and objects nce parses.
inline constexpr int kMaxJsonNesting = 64;

// The byte offset of the first '[' or '{' that opens a level deeper than `max_depth`, or
// std::string_view::npos when none does. Brackets inside JSON strings do not count (a
// backslash in a string escapes the byte after it). The text need not be valid JSON: the
// parser that runs next reports what else is wrong with it.
std::size_t find_excess_json_nesting(std::string_view text, int max_depth = kMaxJsonNesting);

// Throws nce::Error "<what>: JSON nesting exceeds 64 levels at byte N ..." when `text` nests
// deeper than kMaxJsonNesting. `what` names the file (and the part of it) for the message.
void check_json_nesting(std::string_view text, const std::string& what);

}  // namespace nce
