#include "retrieval/code/cpp_functions.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "engine/error.h"

namespace nce::code {
namespace {

namespace fs = std::filesystem;

struct CppFunction {
    std::string name;
    int line = 0;
    std::string signature, comment, body;
};

std::string collapse_spaces(const std::string& text) {
    std::string out;
    for (char c : text) {
        bool space = c == ' ' || c == '\n' || c == '\t' || c == '\r';
        if (space) {
            if (!out.empty() && out.back() != ' ') out += ' ';
        } else {
            out += c;
        }
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out;
}

// The lines of `text` without leading and trailing blank lines, less their common indentation.
std::string dedent(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream stream(text);
    for (std::string line; std::getline(stream, line);) lines.push_back(line);
    auto blank = [](const std::string& line) { return line.find_first_not_of(" \t\r") == std::string::npos; };
    while (!lines.empty() && blank(lines.front())) lines.erase(lines.begin());
    while (!lines.empty() && blank(lines.back())) lines.pop_back();
    size_t indent = std::string::npos;
    for (const std::string& line : lines)
        if (!blank(line)) indent = std::min(indent, line.find_first_not_of(" \t"));
    std::string out;
    for (const std::string& line : lines) {
        if (!out.empty()) out += '\n';
        if (!blank(line)) out += line.substr(indent);
    }
    return out;
}

// The name before the header's first '(' ("Tensor unit_rows(" -> "unit_rows").
std::string function_name(const std::string& signature) {
    size_t paren = signature.find('(');
    size_t end = paren;
    while (end > 0 && signature[end - 1] == ' ') --end;
    size_t start = end;
    while (start > 0 && (std::isalnum(static_cast<unsigned char>(signature[start - 1])) || signature[start - 1] == '_' ||
                         signature[start - 1] == ':' || signature[start - 1] == '~'))
        --start;
    return signature.substr(start, end - start);
}

bool starts_with_word(const std::string& text, const char* word) {
    std::string w = word;
    return text.starts_with(w) && (text.size() == w.size() || !std::isalnum(static_cast<unsigned char>(text[w.size()])));
}

// The scanner described in cpp_functions.h.
std::vector<CppFunction> find_cpp_functions(const std::string& source) {
    std::vector<CppFunction> functions;
    std::vector<std::string> comment;  // the // lines right above the header being read
    int comment_last_line = -10;
    std::string header;
    int header_line = 0, line = 1;
    bool line_has_code = false;     // a character other than space seen on this line
    int open_blocks = 0;            // opaque blocks (function, class, initializer) open
    bool in_function = false;
    size_t body_start = 0;
    CppFunction current;
    size_t i = 0, n = source.size();
    auto skip_literal = [&](char quote) {  // i at the opening quote; leaves i after the closing one
        ++i;
        while (i < n && source[i] != quote) {
            if (source[i] == '\\') ++i;
            else if (source[i] == '\n') ++line;
            ++i;
        }
        ++i;
    };
    while (i < n) {
        char c = source[i];
        if (c == '\n') {
            ++line;
            line_has_code = false;
            if (open_blocks == 0) header += ' ';
            ++i;
            continue;
        }
        if (c == '/' && i + 1 < n && source[i + 1] == '/') {
            size_t end = source.find('\n', i);
            if (end == std::string::npos) end = n;
            if (open_blocks == 0 && collapse_spaces(header).empty() && !line_has_code) {
                if (comment_last_line != line - 1) comment.clear();
                comment.push_back(collapse_spaces(source.substr(i + 2, end - i - 2)));
                comment_last_line = line;
            }
            i = end;
            continue;
        }
        if (c == '/' && i + 1 < n && source[i + 1] == '*') {
            size_t end = source.find("*/", i + 2);
            end = end == std::string::npos ? n : end + 2;
            line += static_cast<int>(std::count(source.begin() + static_cast<std::ptrdiff_t>(i),
                                                source.begin() + static_cast<std::ptrdiff_t>(end), '\n'));
            i = end;
            continue;
        }
        if (c == '#' && !line_has_code) {  // a preprocessor line, with its continuations
            while (i < n && source[i] != '\n') {
                if (source[i] == '\\' && i + 1 < n && source[i + 1] == '\n') {
                    ++line;
                    ++i;
                }
                ++i;
            }
            continue;
        }
        if (c != ' ' && c != '\t' && c != '\r') line_has_code = true;
        if (c == 'R' && i + 1 < n && source[i + 1] == '"') {  // R"delimiter( ... )delimiter"
            size_t open = source.find('(', i);
            std::string closing = ")";  // ")delimiter\""
            closing.append(source, i + 2, open - i - 2);
            closing += '"';
            size_t end = source.find(closing, open);
            end = end == std::string::npos ? n : end + closing.size();
            line += static_cast<int>(std::count(source.begin() + static_cast<std::ptrdiff_t>(i),
                                                source.begin() + static_cast<std::ptrdiff_t>(end), '\n'));
            if (open_blocks == 0) header += source.substr(i, end - i);
            i = end;
            continue;
        }
        if (c == '"' || (c == '\'' && !(i > 0 && std::isxdigit(static_cast<unsigned char>(source[i - 1]))))) {
            size_t start = i;
            skip_literal(c);
            if (open_blocks == 0) header += source.substr(start, i - start);
            continue;
        }
        if (open_blocks > 0) {
            if (c == '{') ++open_blocks;
            if (c == '}' && --open_blocks == 0) {
                if (in_function) {
                    current.body = dedent(source.substr(body_start, i - body_start));
                    if (current.body.find(';') != std::string::npos) functions.push_back(current);
                }
                in_function = false;
                header.clear();
                comment.clear();
            }
            ++i;
            continue;
        }
        // Namespace level.
        if (c == ';' || c == '}') {
            header.clear();
            comment.clear();
        } else if (c == '{') {
            std::string signature = collapse_spaces(header);
            bool transparent = starts_with_word(signature, "namespace") || starts_with_word(signature, "extern");
            if (!transparent) {
                open_blocks = 1;
                size_t paren = signature.find('(');
                size_t equals = signature.find('=');
                bool is_type = starts_with_word(signature, "class") || starts_with_word(signature, "struct") ||
                               starts_with_word(signature, "enum") || starts_with_word(signature, "union");
                in_function = paren != std::string::npos && !is_type && (equals == std::string::npos || equals > paren) &&
                              !function_name(signature).empty();
                if (in_function) {
                    current = CppFunction{};
                    current.signature = signature;
                    current.name = function_name(signature);
                    current.line = header_line;
                    if (comment_last_line == header_line - 1)
                        for (const std::string& text : comment) {
                            if (!current.comment.empty()) current.comment += '\n';
                            current.comment += text;
                        }
                    body_start = i + 1;
                }
            }
            header.clear();
            if (transparent) comment.clear();
        } else {
            if (collapse_spaces(header).empty() && c != ' ' && c != '\t' && c != '\r') header_line = line;
            header += c;
        }
        ++i;
    }
    return functions;
}

}  // namespace

data::RetrievalDataset mine_cpp_tree(const std::string& root, bool require_comment) {
    std::error_code error_code;
    NCE_CHECK(fs::is_directory(root, error_code), "C++ sources {}: no such folder", root);
    std::vector<fs::path> files;
    for (fs::recursive_directory_iterator entry(root, fs::directory_options::skip_permission_denied, error_code), end;
         !error_code && entry != end; entry.increment(error_code)) {
        std::string name = entry->path().filename().string();
        if (entry->is_directory(error_code)) {
            if (name.starts_with("build") || name.starts_with(".") || name == "tests" || name == "subprojects")
                entry.disable_recursion_pending();
            continue;
        }
        if (entry->path().extension() == ".cpp" && entry->is_regular_file(error_code)) files.push_back(entry->path());
    }
    std::sort(files.begin(), files.end());
    data::RetrievalDataset dataset;
    dataset.name = fmt::format("C++ functions of {}", root);
    for (const fs::path& file : files) {
        std::ifstream stream(file, std::ios::binary);
        std::ostringstream buffer;
        buffer << stream.rdbuf();
        std::string relative = file.lexically_relative(root).generic_string();
        ++dataset.report.records["files"];
        for (const CppFunction& function : find_cpp_functions(buffer.str())) {
            if (require_comment && function.comment.empty()) {
                ++dataset.report.skipped["no comment above"];
                continue;
            }
            std::string id = fmt::format("{}:{}:{}", relative, function.line, function.name);
            std::string query = function.comment.empty() ? function.signature : function.signature + "\n" + function.comment;
            auto index = static_cast<int64_t>(dataset.queries.size());
            dataset.queries.push_back({id, query, relative});
            dataset.passages.push_back({id, function.body, relative});
            dataset.relevance.push_back({index, index, 1.0, 0, false});
            ++dataset.report.records["functions"];
        }
    }
    return dataset;
}

}  // namespace nce::code
