#include "data/python_scanner.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace nce::data {

PythonSyntaxError::PythonSyntaxError(int line, const std::string& problem)
    : Error(fmt::format("line {}: {}", line, problem)), line(line) {}

std::string_view ScannedPython::physical_line(int line) const {
    size_t begin = line_begins.at(static_cast<size_t>(line - 1));
    size_t end = static_cast<size_t>(line) < line_begins.size() ? line_begins[static_cast<size_t>(line)] - 1
                                                                   : source.size();
    return source.substr(begin, end - begin);
}

std::string normalize_newlines(std::string_view text) {
    constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";
    if (text.substr(0, kByteOrderMark.size()) == kByteOrderMark) text.remove_prefix(kByteOrderMark.size());
    std::string normalized;
    normalized.reserve(text.size());
    for (size_t i = 0; i < text.size(); ++i) {
        if (text[i] != '\r') {
            normalized += text[i];
        } else {
            normalized += '\n';
            if (i + 1 < text.size() && text[i + 1] == '\n') ++i;  // "\r\n" is one line end
        }
    }
    return normalized;
}

namespace {

// Bytes of a multi-byte UTF-8 character (>= 0x80) count as letters: Python allows Unicode
// identifiers, and the source is known to be valid UTF-8.
bool starts_identifier(char c) {
    auto byte = static_cast<unsigned char>(c);
    return std::isalpha(byte) || c == '_' || byte >= 0x80;
}
bool continues_identifier(char c) { return starts_identifier(c) || std::isdigit(static_cast<unsigned char>(c)); }

bool is_quote(char c) { return c == '\'' || c == '"'; }

// The letters that may stand before a string's quote, in any case and order:
// r (raw), u (unicode), b (bytes), f (formatted), and the pairs br, rb, fr, rf.
struct StringPrefix {
    bool valid = false;
    bool raw = false;
    bool formatted = false;
};

StringPrefix read_string_prefix(std::string_view letters) {
    StringPrefix prefix;
    if (letters.size() > 2) return prefix;
    std::string lower;
    for (char c : letters) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    static const std::string_view kValid[] = {"", "r", "u", "b", "f", "br", "rb", "fr", "rf"};
    prefix.valid = std::find(std::begin(kValid), std::end(kValid), lower) != std::end(kValid);
    prefix.raw = lower.find('r') != std::string::npos;
    prefix.formatted = lower.find('f') != std::string::npos;
    return prefix;
}

char closing_bracket_for(char opening) { return opening == '(' ? ')' : opening == '[' ? ']' : '}'; }

// f-strings can nest (f"{f'{x}'}"); a source nesting deeper than this is refused, not followed
// until the stack runs out.
constexpr int kMaxFStringNesting = 100;

class Scanner {
public:
    explicit Scanner(std::string_view source) : source_(source) {
        result_.source = source;
        result_.line_begins.push_back(0);
        result_.in_string_at_line_begin.push_back(false);
    }

    ScannedPython scan() {
        while (position_ < source_.size()) {
            int indent = read_indentation();
            if (at_end() || current() == '\n' || current() == '#') {  // a blank or comment-only line
                skip_comment();
                if (!at_end()) consume_newline(false);
                continue;
            }
            LogicalLine line;
            line.indent = indent;
            line.first_line = line_;
            read_logical_line(line);
            if (!line.tokens.empty()) result_.lines.push_back(std::move(line));  // a line holding only a backslash has none
        }
        return std::move(result_);
    }

private:
    bool at_end() const { return position_ >= source_.size(); }
    char current() const { return source_[position_]; }
    char ahead(size_t offset) const {
        return position_ + offset < source_.size() ? source_[position_ + offset] : '\0';
    }

    [[noreturn]] void syntax_error(int line, const std::string& problem) const { throw PythonSyntaxError(line, problem); }

    // Consumes the '\n' at the current position; the next physical line begins after it.
    void consume_newline(bool inside_string) {
        ++position_;
        ++line_;
        result_.line_begins.push_back(position_);
        result_.in_string_at_line_begin.push_back(inside_string);
    }

    // Spaces count 1 column, a tab moves to the next multiple of 8, a form feed restarts at 0.
    int read_indentation() {
        int column = 0;
        for (; !at_end(); ++position_) {
            if (current() == ' ') {
                ++column;
            } else if (current() == '\t') {
                column = (column / 8 + 1) * 8;
            } else if (current() == '\f') {
                column = 0;
            } else {
                break;
            }
        }
        return column;
    }

    void skip_comment() {
        if (at_end() || current() != '#') return;
        while (!at_end() && current() != '\n') ++position_;
    }

    // Reads tokens up to the '\n' that ends the statement: one outside every bracket and not
    // after a backslash. Newlines inside brackets and strings only join physical lines.
    void read_logical_line(LogicalLine& line) {
        while (!at_end()) {
            char c = current();
            if (c == ' ' || c == '\t' || c == '\f') {
                ++position_;
            } else if (c == '#') {
                skip_comment();
            } else if (c == '\\') {
                if (ahead(1) != '\n') syntax_error(line_, "a backslash outside a string must be the last character of its line");
                ++position_;
                consume_newline(false);
            } else if (c == '\n') {
                line.last_line = line_;
                consume_newline(false);
                if (open_brackets_.empty()) return;
            } else if (c == '\0') {
                syntax_error(line_, "the source contains a null byte");
            } else {
                line.tokens.push_back(read_token());
            }
        }
        line.last_line = line_;
        if (!open_brackets_.empty()) {
            auto [bracket, opened_at] = open_brackets_.back();
            syntax_error(opened_at, fmt::format("'{}' is never closed", bracket));
        }
    }

    PythonToken read_token() {
        PythonToken token;
        token.begin = position_;
        token.line = line_;
        token.depth = static_cast<int>(open_brackets_.size());
        char c = current();
        if (starts_identifier(c)) {
            while (!at_end() && continues_identifier(current())) ++position_;
            std::string_view word = source_.substr(token.begin, position_ - token.begin);
            StringPrefix prefix = read_string_prefix(word);
            if (!at_end() && is_quote(current()) && prefix.valid) {
                read_string(prefix, 0);
                token.kind = PythonTokenKind::String;
            } else {
                token.kind = PythonTokenKind::Name;
            }
        } else if (is_quote(c)) {
            read_string(StringPrefix{true, false, false}, 0);
            token.kind = PythonTokenKind::String;
        } else if (std::isdigit(static_cast<unsigned char>(c)) ||
                   (c == '.' && std::isdigit(static_cast<unsigned char>(ahead(1))))) {
            read_number();
            token.kind = PythonTokenKind::Number;
        } else {
            read_operator();
            token.kind = PythonTokenKind::Operator;
        }
        token.text = source_.substr(token.begin, position_ - token.begin);
        return token;
    }

    // 42, 0x1F, 1_000, 3.14, 1e-5, 2j: letters, digits, '_', '.', and a sign right after an
    // 'e' (in 0xE+1 that takes "+1" into the number too, which no caller minds).
    void read_number() {
        const size_t begin = position_;
        while (!at_end()) {
            char c = current();
            bool exponent_sign = (c == '+' || c == '-') && position_ > begin &&
                                 (source_[position_ - 1] == 'e' || source_[position_ - 1] == 'E');
            if (!continues_identifier(c) && c != '.' && !exponent_sign) break;
            ++position_;
        }
    }

    // Brackets are counted; "->", ":=" and "..." are one token each (function headers look
    // for the first two); any other character is an operator token of its own.
    void read_operator() {
        char c = current();
        if (c == '(' || c == '[' || c == '{') {
            open_brackets_.emplace_back(c, line_);
        } else if (c == ')' || c == ']' || c == '}') {
            if (open_brackets_.empty()) syntax_error(line_, fmt::format("unmatched '{}'", c));
            auto [opening, opened_at] = open_brackets_.back();
            if (closing_bracket_for(opening) != c) {
                syntax_error(line_, fmt::format("'{}' does not match '{}' opened at line {}", c, opening, opened_at));
            }
            open_brackets_.pop_back();
        }
        std::string_view rest = source_.substr(position_);
        if (rest.substr(0, 3) == "...") {
            position_ += 3;
        } else if (rest.substr(0, 2) == "->" || rest.substr(0, 2) == ":=") {
            position_ += 2;
        } else {
            ++position_;
        }
    }

    // Reads a string literal from its opening quote to just past its closing one.
    //   'x'  "x"       end at the same quote; a newline before it is an error
    //   '''x'''  """x"""  end at three of the same quote; may span lines
    //   \ followed by any character skips it (also in raw strings: r"\"" is one string),
    //     except a brace in an f-string
    //   f-strings: "{{" and "}}" are literal braces; "{" opens a field (read_field)
    // `nesting` counts the f-strings this one sits in.
    void read_string(StringPrefix prefix, int nesting) {
        if (nesting > kMaxFStringNesting) syntax_error(line_, "f-strings nested too deeply to follow");
        const int start_line = line_;
        const char quote = current();
        const bool triple = ahead(1) == quote && ahead(2) == quote;
        position_ += triple ? 3 : 1;
        while (true) {
            if (at_end()) {
                syntax_error(start_line, triple ? "triple-quoted string is never closed" : "string is never closed");
            }
            char c = current();
            if (c == '\\') {
                ++position_;
                if (at_end()) continue;
                if (current() == '\n') {
                    consume_newline(true);
                } else if (prefix.formatted && (current() == '{' || current() == '}')) {
                    // rf"\{{": a backslash does not escape a brace; the brace is read below
                } else if (prefix.formatted && !prefix.raw && current() == 'N' && ahead(1) == '{') {
                    // \N{EM DASH} names a character; its braces are not a field
                    while (!at_end() && current() != '}' && current() != '\n') ++position_;
                    if (!at_end() && current() == '}') ++position_;
                } else {
                    ++position_;
                }
            } else if (c == '\n') {
                if (!triple) syntax_error(start_line, "string is never closed on its line (use ''' or \"\"\" to span lines)");
                consume_newline(true);
            } else if (c == quote && (!triple || (ahead(1) == quote && ahead(2) == quote))) {
                position_ += triple ? 3 : 1;
                return;
            } else if (prefix.formatted && c == '{' && ahead(1) == '{') {
                position_ += 2;
            } else if (prefix.formatted && c == '{') {
                ++position_;
                read_field(nesting + 1);
            } else {
                ++position_;
            }
        }
    }

    // An f-string field after its '{': an expression (which may hold strings, brackets and
    // '}' of its own dict or set literals), then optionally ":format spec", up to the '}'
    // that closes the field. A format spec may hold fields of its own: f"{x:>{width}}".
    void read_field(int nesting) {
        if (nesting > kMaxFStringNesting) syntax_error(line_, "f-strings nested too deeply to follow");
        const int start_line = line_;
        int depth = 0;
        while (true) {
            if (at_end()) syntax_error(start_line, "f-string field '{' is never closed");
            char c = current();
            if (c == '\n') {
                consume_newline(true);
            } else if (is_quote(c)) {
                read_string(StringPrefix{true, false, false}, nesting);
            } else if (starts_identifier(c)) {
                size_t word_begin = position_;
                while (!at_end() && continues_identifier(current())) ++position_;
                StringPrefix prefix = read_string_prefix(source_.substr(word_begin, position_ - word_begin));
                if (!at_end() && is_quote(current()) && prefix.valid) read_string(prefix, nesting);
            } else if (c == '(' || c == '[' || c == '{') {
                ++depth;
                ++position_;
            } else if (c == ')' || c == ']') {
                --depth;
                ++position_;
            } else if (c == '}') {
                ++position_;
                if (depth == 0) return;
                --depth;
            } else if (c == ':' && depth == 0) {
                ++position_;
                read_format_spec(nesting);
                return;
            } else if (c == '#') {  // a comment in a field that spans lines (Python 3.12)
                skip_comment();
            } else {
                ++position_;
            }
        }
    }

    void read_format_spec(int nesting) {
        const int start_line = line_;
        while (true) {
            if (at_end()) syntax_error(start_line, "f-string field '{' is never closed");
            char c = current();
            if (c == '\n') {
                consume_newline(true);
            } else if (c == '{') {
                ++position_;
                read_field(nesting + 1);
            } else if (c == '}') {
                ++position_;
                return;
            } else {
                ++position_;
            }
        }
    }

    std::string_view source_;
    size_t position_ = 0;
    int line_ = 1;
    std::vector<std::pair<char, int>> open_brackets_;  // the bracket and the line it opened on
    ScannedPython result_;
};

}  // namespace

ScannedPython scan_python(std::string_view source) { return Scanner(source).scan(); }

}  // namespace nce::data
