// Python source as a list of logical lines of tokens: the small part of Python's own
// tokenizer that finding functions needs (data/python_functions.h).
//
// A logical line is one statement or block header. It may run over several physical lines,
// joined by an open bracket, a backslash at the end of a line, or a triple-quoted string:
//
//     def scale(x,              <- one logical line, physical lines 1..3,
//               factor=2.0      <- joined by the open '('
//               ) -> float:
//         return x * factor     <- the next logical line, indent 4
//
// The scanner knows strings (single- and triple-quoted, with the prefixes r u b f and their
// pairs, backslash escapes, f-string fields with strings nested inside), comments, brackets
// and indentation, so `def` inside a string or a comment is never a token. It does not run
// or parse Python: numbers and operators are kept as plain text, and only what would stop a
// reader from finding where a statement ends is an error (an unterminated string, a bracket
// that is never closed or closes the wrong one, a stray backslash, a null byte).
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "engine/error.h"

namespace nce::data {

enum class PythonTokenKind { Name, Number, String, Operator };

struct PythonToken {
    PythonTokenKind kind = PythonTokenKind::Operator;
    std::string_view text;  // a view into the scanned source, prefix and quotes included for a string
    size_t begin = 0;       // byte offset of its first character in the source
    int line = 0;           // 1-based physical line where it starts
    int depth = 0;          // brackets open just before it: a '(' at depth d has its ')' at depth d + 1
};

struct LogicalLine {
    int indent = 0;      // column of its first token; a tab moves to the next multiple of 8
    int first_line = 0;  // 1-based physical lines it covers (a trailing comment included)
    int last_line = 0;
    std::vector<PythonToken> tokens;  // never empty: blank and comment-only lines are not logical lines
};

struct ScannedPython {
    std::string_view source;
    std::vector<LogicalLine> lines;
    std::vector<size_t> line_begins;  // line_begins[n - 1]: byte offset where physical line n begins
    // in_string_at_line_begin[n - 1]: physical line n begins inside a (triple-quoted) string,
    // so its leading spaces are part of the string's value and must not be removed by a dedent.
    std::vector<bool> in_string_at_line_begin;

    // Physical line n (1-based) without its '\n'.
    std::string_view physical_line(int line) const;
};

// Source the scanner cannot follow. The message names the line and the problem.
struct PythonSyntaxError : Error {
    PythonSyntaxError(int line, const std::string& problem);
    int line;
};

// Scans `source`, which must be UTF-8 with '\n' line ends (normalize_newlines). The tokens
// and the result view into `source`: keep it alive as long as the result is used.
// Throws PythonSyntaxError.
ScannedPython scan_python(std::string_view source);

// Python reads "\r\n" and a lone "\r" as "\n", and skips a UTF-8 byte order mark at the start.
std::string normalize_newlines(std::string_view text);

}  // namespace nce::data
