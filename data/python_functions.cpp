#include "data/python_functions.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <optional>

#include "data/text_cleaning.h"

namespace nce::data {

namespace {

bool is_name(const PythonToken& token, std::string_view word) {
    return token.kind == PythonTokenKind::Name && token.text == word;
}

bool is_operator(const PythonToken& token, std::string_view text) {
    return token.kind == PythonTokenKind::Operator && token.text == text;
}

// The index of the first token from `from` on that is operator `text` at bracket depth
// `depth`, or npos.
size_t find_operator(const std::vector<PythonToken>& tokens, size_t from, std::string_view text, int depth) {
    for (size_t i = from; i < tokens.size(); ++i) {
        if (tokens[i].depth == depth && is_operator(tokens[i], text)) return i;
    }
    return std::string::npos;
}

bool starts_function(const std::vector<PythonToken>& tokens) {
    return is_name(tokens[0], "def") || (is_name(tokens[0], "async") && tokens.size() > 1 && is_name(tokens[1], "def"));
}

// The letters before a string token's quote, e.g. "rb" for rb'...'.
std::string_view string_prefix(const PythonToken& token) { return token.text.substr(0, token.text.find_first_of("'\"")); }

// A statement made only of string literals that are neither bytes nor f-strings: what Python
// takes as a docstring when it comes first in a body ("a" "b" is one string, concatenated).
bool is_docstring_statement(const std::vector<PythonToken>& tokens, size_t from) {
    if (from >= tokens.size()) return false;
    return std::all_of(tokens.begin() + static_cast<std::ptrdiff_t>(from), tokens.end(), [](const PythonToken& token) {
        return token.kind == PythonTokenKind::String && string_prefix(token).find_first_of("bBfF") == std::string::npos;
    });
}

std::string docstring_of_statement(const std::vector<PythonToken>& tokens, size_t from) {
    std::string value;
    for (size_t i = from; i < tokens.size(); ++i) value += string_literal_value(tokens[i].text);
    return clean_docstring(value);
}

// `pass`, `...`, or several of them joined by ';'.
bool is_placeholder_statement(const std::vector<PythonToken>& tokens, size_t from) {
    return std::all_of(tokens.begin() + static_cast<std::ptrdiff_t>(from), tokens.end(), [](const PythonToken& token) {
        return is_name(token, "pass") || is_operator(token, "...") || is_operator(token, ";");
    });
}

// tokens[first..last] as one line: where the source had spaces, line breaks or comments
// between two tokens, one space; none after an opening bracket or before a closing one or a
// comma. "def f(\n    a,  # x\n    b=1,\n):" reads "def f(a, b=1,):".
std::string tokens_on_one_line(const std::vector<PythonToken>& tokens, size_t first, size_t last) {
    std::string text(tokens[first].text);
    for (size_t i = first + 1; i <= last; ++i) {
        const PythonToken& previous = tokens[i - 1];
        const PythonToken& token = tokens[i];
        bool had_gap = token.begin > previous.begin + previous.text.size();
        bool after_opening = is_operator(previous, "(") || is_operator(previous, "[") || is_operator(previous, "{");
        bool before_closing = is_operator(token, ")") || is_operator(token, "]") || is_operator(token, "}") ||
                              is_operator(token, ",");
        if (had_gap && !after_opening && !before_closing) text += ' ';
        text += token.text;
    }
    return text;
}

// `line` without the first `indent` columns of leading whitespace (fewer if it has fewer);
// a line of only whitespace becomes empty.
std::string_view remove_indentation(std::string_view line, int indent) {
    size_t position = 0;
    int column = 0;
    while (position < line.size() && column < indent && (line[position] == ' ' || line[position] == '\t')) {
        column = line[position] == '\t' ? (column / 8 + 1) * 8 : column + 1;
        ++position;
    }
    line.remove_prefix(position);
    return line.find_first_not_of(" \t\f") == std::string_view::npos ? std::string_view() : line;
}

bool is_blank(std::string_view line) { return line.find_first_not_of(" \t\f") == std::string_view::npos; }

// One `def` header: [async] def NAME [type parameters] ( parameters ) [-> annotation] :
struct FunctionHeader {
    bool is_async = false;
    std::string_view name;
    size_t colon = 0;  // index of the token ':' that ends the header
};

FunctionHeader read_function_header(const LogicalLine& line) {
    const std::vector<PythonToken>& tokens = line.tokens;
    FunctionHeader header;
    header.is_async = is_name(tokens[0], "async");
    size_t next = header.is_async ? 2 : 1;  // just after `def`
    if (next >= tokens.size() || tokens[next].kind != PythonTokenKind::Name) {
        throw PythonSyntaxError(line.first_line, "'def' is not followed by a function name");
    }
    header.name = tokens[next].text;
    ++next;
    if (next < tokens.size() && is_operator(tokens[next], "[")) {  // def first[T](items: list[T]) -> T:
        size_t closing = find_operator(tokens, next + 1, "]", tokens[next].depth + 1);
        if (closing == std::string::npos) throw PythonSyntaxError(line.first_line, "type parameters '[' are never closed");
        next = closing + 1;
    }
    if (next >= tokens.size() || !is_operator(tokens[next], "(")) {
        throw PythonSyntaxError(line.first_line, fmt::format("def {}: expected '(' after the name", header.name));
    }
    size_t closing = find_operator(tokens, next + 1, ")", tokens[next].depth + 1);
    header.colon = closing == std::string::npos ? closing : find_operator(tokens, closing + 1, ":", 0);
    if (header.colon == std::string::npos) {
        throw PythonSyntaxError(line.first_line, fmt::format("def {}: the header does not end with ':'", header.name));
    }
    return header;
}

// Every method's qualified name repeats the names of the classes around it, so a class named
// with megabytes over thousands of one-line methods would make the result thousands of times
// bigger than the source. Real nestings of class names are a few dozen bytes.
constexpr size_t kMaxClassNameBytes = 1024;

// One block of indented lines and the header that opened it.
struct Block {
    enum class Kind { Class, Function, Other };  // Other: if, for, while, try, with, match, ...
    Kind kind = Kind::Other;
    std::string_view class_name;  // for Kind::Class
    int function = -1;            // index of the PythonFunction whose body this is, -1 when not mined
    size_t header = 0;            // index of the header's logical line
    size_t first_body_line = 0;
};

// Walks the logical lines once, keeping the stack of open blocks the way Python's tokenizer
// keeps its stack of indentation levels: a line indented deeper than the current level opens
// a block (only allowed right after a header ending in ':'), a line indented less closes
// blocks until its level is reached again (and must land exactly on an outer level).
class FunctionFinder {
public:
    explicit FunctionFinder(const ScannedPython& scanned) : scanned_(scanned), lines_(scanned.lines) {}

    std::vector<PythonFunction> find() {
        for (size_t index = 0; index < lines_.size(); ++index) {
            follow_indentation(index);
            read_statement(index);
        }
        if (opening_) {
            throw PythonSyntaxError(lines_[opening_->header].first_line,
                                    "the block opened here has no body before the end of the file");
        }
        while (!blocks_.empty()) close_block(lines_.size() - 1);
        return std::move(functions_);
    }

private:
    void follow_indentation(size_t index) {
        const LogicalLine& line = lines_[index];
        if (opening_) {
            if (line.indent <= indents_.back()) {
                throw PythonSyntaxError(line.first_line, fmt::format("expected an indented block after line {}",
                                                                     lines_[opening_->header].first_line));
            }
            indents_.push_back(line.indent);
            opening_->first_body_line = index;
            blocks_.push_back(*opening_);
            opening_.reset();
            return;
        }
        if (line.indent > indents_.back()) throw PythonSyntaxError(line.first_line, "unexpected indent");
        while (line.indent < indents_.back()) {
            indents_.pop_back();
            close_block(index - 1);
        }
        if (line.indent != indents_.back()) {
            throw PythonSyntaxError(line.first_line, "unindent does not match any outer indentation level");
        }
    }

    void read_statement(size_t index) {
        const LogicalLine& line = lines_[index];
        const std::vector<PythonToken>& tokens = line.tokens;
        Block block;
        block.header = index;
        size_t header_colon = std::string::npos;
        if (starts_function(tokens)) {
            FunctionHeader header = read_function_header(line);
            header_colon = header.colon;
            block.kind = Block::Kind::Function;
            if (!inside_function()) {
                block.function = static_cast<int>(functions_.size());
                functions_.push_back(start_function(line, header));
            }
        } else if (is_name(tokens[0], "class")) {
            if (tokens.size() < 2 || tokens[1].kind != PythonTokenKind::Name) {
                throw PythonSyntaxError(line.first_line, "'class' is not followed by a class name");
            }
            header_colon = find_operator(tokens, 2, ":", 0);
            if (header_colon == std::string::npos) {
                throw PythonSyntaxError(line.first_line, fmt::format("class {}: the header does not end with ':'", tokens[1].text));
            }
            block.kind = Block::Kind::Class;
            block.class_name = tokens[1].text;
        } else if (is_operator(tokens.back(), ":") && tokens.back().depth == 0) {
            header_colon = tokens.size() - 1;
        }
        // A header followed by its body on the same line ("def f(): return 1") opens no block.
        if (header_colon == tokens.size() - 1) opening_ = block;
    }

    bool inside_function() const {
        return std::any_of(blocks_.begin(), blocks_.end(), [](const Block& b) { return b.kind == Block::Kind::Function; });
    }

    PythonFunction start_function(const LogicalLine& line, const FunctionHeader& header) {
        PythonFunction function;
        size_t class_name_bytes = 0;
        for (const Block& block : blocks_) {
            if (block.kind == Block::Kind::Class) class_name_bytes += block.class_name.size() + 1;
        }
        if (class_name_bytes > kMaxClassNameBytes) {
            throw PythonSyntaxError(line.first_line,
                                    fmt::format("def {}: the names of the classes around it come to {} bytes, more than "
                                                "the {} followed",
                                                header.name, class_name_bytes, kMaxClassNameBytes));
        }
        for (const Block& block : blocks_) {
            if (block.kind == Block::Kind::Class) function.qualified_name += fmt::format("{}.", block.class_name);
        }
        function.qualified_name += header.name;
        function.line = line.first_line;
        auto innermost = std::find_if(blocks_.rbegin(), blocks_.rend(), [](const Block& b) { return b.kind != Block::Kind::Other; });
        function.is_method = innermost != blocks_.rend() && innermost->kind == Block::Kind::Class;
        function.is_async = header.is_async;
        function.signature = tokens_on_one_line(line.tokens, 0, header.colon);
        size_t after_colon = header.colon + 1;
        if (after_colon < line.tokens.size()) {  // def f(x): return x
            if (is_docstring_statement(line.tokens, after_colon)) {
                function.docstring = docstring_of_statement(line.tokens, after_colon);
            } else {
                std::string_view last = scanned_.physical_line(line.last_line);
                size_t body_begin = line.tokens[after_colon].begin;
                size_t body_end = static_cast<size_t>(last.data() + last.size() - scanned_.source.data());
                function.body = std::string(scanned_.source.substr(body_begin, body_end - body_begin));
                function.body_is_placeholder = is_placeholder_statement(line.tokens, after_colon);
            }
        }
        return function;
    }

    void close_block(size_t last_body_line) {
        Block block = blocks_.back();
        blocks_.pop_back();
        if (block.function >= 0) {
            finish_body(functions_[static_cast<size_t>(block.function)], block, last_body_line);
        }
    }

    // Docstring and body of a function whose body is the logical lines
    // first_body_line..last_body_line.
    void finish_body(PythonFunction& function, const Block& block, size_t last_body_line) {
        const LogicalLine& first = lines_[block.first_body_line];
        size_t first_statement = block.first_body_line;
        int text_begins_at = lines_[block.header].last_line + 1;
        if (is_docstring_statement(first.tokens, 0)) {
            function.docstring = docstring_of_statement(first.tokens, 0);
            ++first_statement;
            text_begins_at = first.last_line + 1;
        }
        if (first_statement > last_body_line) return;  // only a docstring
        function.body = dedented_text(text_begins_at, lines_[last_body_line].last_line, first.indent);
        function.body_is_placeholder = true;
        for (size_t i = first_statement; i <= last_body_line; ++i) {
            if (!is_placeholder_statement(lines_[i].tokens, 0)) function.body_is_placeholder = false;
        }
    }

    // Physical lines first..last without `indent` columns, blank lines at the start dropped.
    std::string dedented_text(int first, int last, int indent) const {
        std::string text;
        for (int line = first; line <= last; ++line) {
            std::string_view physical = scanned_.physical_line(line);
            bool in_string = scanned_.in_string_at_line_begin[static_cast<size_t>(line - 1)];
            if (text.empty() && is_blank(physical)) continue;
            if (!text.empty()) text += '\n';
            text += in_string ? physical : remove_indentation(physical, indent);
        }
        return text;
    }

    const ScannedPython& scanned_;
    const std::vector<LogicalLine>& lines_;
    std::vector<PythonFunction> functions_;
    std::vector<int> indents_{0};       // the indentation of each open level, outermost first
    std::vector<Block> blocks_;         // the block of each level after the first
    std::optional<Block> opening_;      // the previous line was this block's header
};

}  // namespace

std::vector<PythonFunction> find_python_functions(std::string_view source) {
    ScannedPython scanned = scan_python(source);
    return FunctionFinder(scanned).find();
}

namespace {

// The value of `count` hex digits at text[at...], or -1 when they are not all hex digits.
int64_t hex_value(std::string_view text, size_t at, size_t count) {
    if (at + count > text.size()) return -1;
    int64_t value = 0;
    for (size_t i = at; i < at + count; ++i) {
        char c = static_cast<char>(std::tolower(static_cast<unsigned char>(text[i])));
        if (!std::isxdigit(static_cast<unsigned char>(c))) return -1;
        value = value * 16 + (std::isdigit(static_cast<unsigned char>(c)) ? c - '0' : c - 'a' + 10);
    }
    return value;
}

}  // namespace

std::string string_literal_value(std::string_view literal) {
    size_t quote = literal.find_first_of("'\"");
    if (quote == std::string_view::npos) return std::string(literal);
    bool raw = literal.substr(0, quote).find_first_of("rR") != std::string_view::npos;
    std::string_view quoted = literal.substr(quote);
    bool triple = quoted.size() >= 6 && quoted[1] == quoted[0] && quoted[2] == quoted[0];
    size_t quote_length = triple ? 3 : 1;
    std::string_view content = quoted.substr(quote_length, quoted.size() - 2 * quote_length);
    if (raw) return std::string(content);
    std::string value;
    for (size_t i = 0; i < content.size(); ++i) {
        if (content[i] != '\\' || i + 1 == content.size()) {
            value += content[i];
            continue;
        }
        char escaped = content[++i];
        // \xhh, \uhhhh, \Uhhhhhhhh: a code point in hex digits; \ooo: in up to three octal digits
        size_t hex_digits = escaped == 'x' ? 2 : escaped == 'u' ? 4 : escaped == 'U' ? 8 : 0;
        if (hex_digits > 0 && hex_value(content, i + 1, hex_digits) >= 0) {
            append_utf8(value, static_cast<uint32_t>(hex_value(content, i + 1, hex_digits)));
            i += hex_digits;
            continue;
        }
        if (escaped >= '0' && escaped <= '7') {
            uint32_t code_point = 0;
            size_t end = std::min(i + 3, content.size());
            for (; i < end && content[i] >= '0' && content[i] <= '7'; ++i) code_point = code_point * 8 + (content[i] - '0');
            --i;
            append_utf8(value, code_point);
            continue;
        }
        switch (escaped) {
            case 'n': value += '\n'; break;
            case 't': value += '\t'; break;
            case 'r': value += '\r'; break;
            case 'a': value += '\a'; break;
            case 'b': value += '\b'; break;
            case 'f': value += '\f'; break;
            case 'v': value += '\v'; break;
            case '\\': value += '\\'; break;
            case '\'': value += '\''; break;
            case '"': value += '"'; break;
            case '\n': break;  // a backslash at the end of a line joins it with the next
            default: value += '\\'; value += escaped;  // \N{...} and unknown escapes: kept as written
        }
    }
    return value;
}

namespace {

// Python's str.expandtabs(): each tab becomes the spaces up to the next multiple of 8
// columns, counting characters (not the continuation bytes of UTF-8).
std::string expand_tabs(std::string_view text) {
    std::string expanded;
    size_t column = 0;
    for (char c : text) {
        if (c == '\t') {
            size_t spaces = 8 - column % 8;
            expanded.append(spaces, ' ');
            column += spaces;
            continue;
        }
        expanded += c;
        if (c == '\n') {
            column = 0;
        } else if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) {
            ++column;
        }
    }
    return expanded;
}

}  // namespace

std::string clean_docstring(std::string_view text) {
    const std::string docstring = expand_tabs(text);
    std::vector<std::string_view> lines;
    for (size_t begin = 0;;) {
        size_t end = docstring.find('\n', begin);
        lines.push_back(std::string_view(docstring).substr(begin, end == std::string::npos ? std::string::npos : end - begin));
        if (end == std::string::npos) break;
        begin = end + 1;
    }
    size_t common = std::string_view::npos;  // the smallest indentation of a non-blank line after the first
    for (size_t i = 1; i < lines.size(); ++i) {
        if (!is_blank(lines[i])) common = std::min(common, lines[i].find_first_not_of(" \t"));
    }
    size_t first_text = lines[0].find_first_not_of(" \t");
    lines[0].remove_prefix(first_text == std::string_view::npos ? lines[0].size() : first_text);
    for (size_t i = 1; i < lines.size(); ++i) {
        lines[i] = is_blank(lines[i]) ? std::string_view() : lines[i].substr(common);
    }
    size_t begin = 0, end = lines.size();
    while (begin < end && is_blank(lines[begin])) ++begin;
    while (end > begin && is_blank(lines[end - 1])) --end;
    std::string cleaned;
    for (size_t i = begin; i < end; ++i) {
        if (i > begin) cleaned += '\n';
        cleaned += lines[i];
    }
    return cleaned;
}

}  // namespace nce::data
