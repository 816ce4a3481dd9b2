#include "data/codesearchnet_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string_view>

#include "data/python_functions.h"
#include "data/reader_support.h"
#include "data/text_cleaning.h"
#include "engine/json_nesting.h"

namespace nce::data {

namespace {

using nlohmann::json;

// Why one line cannot be used: `reason` is the category counted in ReadReport::skipped,
// `detail` says what exactly is wrong.
struct BadLine {
    std::string reason;
    std::string detail;
};

const json& required_field(const json& record, const char* name, json::value_t type) {
    auto field = record.find(name);
    if (field == record.end()) throw BadLine{"missing field", fmt::format("missing field '{}'", name)};
    if (field->type() != type) {
        const char* expected = type == json::value_t::string ? "a string" : "an array";
        throw BadLine{"field of the wrong type", fmt::format("field '{}' is {}, expected {}", name, field->type_name(), expected)};
    }
    return *field;
}

// The field's text, or "" when it is missing or null.
std::string optional_string(const json& record, const char* name) {
    auto field = record.find(name);
    if (field == record.end() || field->is_null()) return "";
    if (!field->is_string()) {
        throw BadLine{"field of the wrong type", fmt::format("field '{}' is {}, expected a string", name, field->type_name())};
    }
    return field->get<std::string>();
}

// Removes the indentation all non-blank lines share (Python's textwrap.dedent), so that a
// method cut out of its class reads as a top-level function.
std::string remove_common_indentation(std::string_view code) {
    size_t common = std::string_view::npos;
    for (size_t begin = 0; begin < code.size();) {
        size_t end = std::min(code.find('\n', begin), code.size());
        std::string_view line = code.substr(begin, end - begin);
        size_t text = line.find_first_not_of(" \t");
        if (text != std::string_view::npos) common = std::min(common, text);
        begin = end + 1;
    }
    if (common == 0 || common == std::string_view::npos) return std::string(code);
    std::string dedented;
    for (size_t begin = 0; begin < code.size();) {
        size_t end = std::min(code.find('\n', begin), code.size());
        std::string_view line = code.substr(begin, end - begin);
        dedented += line.substr(std::min(common, line.size()));
        if (end < code.size()) dedented += '\n';
        begin = end + 1;
    }
    return dedented;
}

struct CodeSearchNetFunction {
    std::string id;
    std::string group;
    PythonFunction function;  // cut from `code`
    std::string docstring;    // the `docstring` field
};

CodeSearchNetFunction parse_line(const std::string& line, const std::string& file_name, int64_t line_number) {
    size_t invalid = find_invalid_utf8(line);
    if (invalid != std::string::npos) throw BadLine{"invalid UTF-8", fmt::format("invalid UTF-8 at byte {}", invalid)};
    size_t too_deep = find_excess_json_nesting(line);
    if (too_deep != std::string::npos)
        throw BadLine{"invalid JSON", fmt::format("JSON nesting exceeds {} levels at byte {}", kMaxJsonNesting, too_deep)};
    json record;
    try {
        record = json::parse(line);
    } catch (const json::exception& error) {  // a parse_error, or out_of_range for a number like 1e999
        std::string detail = error.what();  // "[json.exception.parse_error.101] parse error at ..."
        size_t bracket = detail.find("] ");
        if (bracket != std::string::npos) detail = detail.substr(bracket + 2);
        throw BadLine{"invalid JSON", fmt::format("not valid JSON: {}", truncate_utf8(detail, 120))};
    }
    if (!record.is_object()) {
        throw BadLine{"invalid JSON", fmt::format("the line is a JSON {}, expected an object", record.type_name())};
    }
    CodeSearchNetFunction parsed;
    std::string code = required_field(record, "code", json::value_t::string).get<std::string>();
    parsed.docstring = required_field(record, "docstring", json::value_t::string).get<std::string>();
    std::string func_name = required_field(record, "func_name", json::value_t::string).get<std::string>();
    required_field(record, "code_tokens", json::value_t::array);
    required_field(record, "docstring_tokens", json::value_t::array);
    std::string repo = optional_string(record, "repo");
    std::string path = optional_string(record, "path");
    std::string url = optional_string(record, "url");
    parsed.id = !url.empty() ? url : fmt::format("{}:{}:{}", file_name, line_number, func_name);
    parsed.group = !repo.empty() ? repo : path;

    std::string source = remove_common_indentation(normalize_newlines(code));
    std::vector<PythonFunction> functions;
    try {
        functions = find_python_functions(source);
    } catch (const PythonSyntaxError& error) {
        throw BadLine{"code the scanner cannot follow", fmt::format("code of {}, {}", func_name, error.what())};
    }
    if (functions.empty()) throw BadLine{"code without a function", fmt::format("code of {} has no 'def'", func_name)};
    parsed.function = std::move(functions.front());
    return parsed;
}

void add_function(CodeSearchNetFunction& parsed, RetrievalDataset& dataset) {
    ReadReport& report = dataset.report;
    PythonFunction& function = parsed.function;
    if (function.body_is_placeholder) {
        ++report.skipped["function body is only pass or ..."];
        return;
    }
    if (function.body.empty()) {
        ++report.skipped["function body is only a docstring"];
        return;
    }
    const std::string& docstring = parsed.docstring.empty() ? function.docstring : parsed.docstring;
    std::string query = docstring.empty() ? function.signature : function.signature + "\n" + docstring;
    auto index = static_cast<int64_t>(dataset.queries.size());
    dataset.queries.push_back({parsed.id, std::move(query), parsed.group});
    dataset.passages.push_back({parsed.id, std::move(function.body), parsed.group});
    dataset.relevance.push_back({index, index, 1.0, 0, false});
    ++report.records["functions"];
}

}  // namespace

RetrievalDataset read_codesearchnet_jsonl(const std::string& path, Leniency leniency) {
    auto start = std::chrono::steady_clock::now();
    std::ifstream file = open_source_file(path);
    std::string file_name = std::filesystem::path(path).filename().string();
    RetrievalDataset dataset;
    dataset.name = path;
    dataset.report.records["lines"] = 0;
    dataset.report.records["functions"] = 0;
    std::string line;
    for (int64_t line_number = 1; std::getline(file, line); ++line_number) {
        if (line_number == 1 && line.size() >= 2 && line[0] == '\x1f' && line[1] == '\x8b') {
            fail("{}: the file is gzip-compressed (CodeSearchNet ships *.jsonl.gz); decompress it first: gunzip {}", path,
                 path);
        }
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.find_first_not_of(" \t") == std::string::npos) continue;
        ++dataset.report.records["lines"];
        try {
            CodeSearchNetFunction parsed = parse_line(line, file_name, line_number);
            add_function(parsed, dataset);
        } catch (const BadLine& bad) {
            skip_or_fail(dataset.report, leniency, bad.reason, fmt::format("{} line {}: {}", path, line_number, bad.detail));
        }
    }
    NCE_CHECK(!file.bad(), "{}: reading the file failed", path);
    dataset.report.seconds = seconds_since(start);
    return dataset;
}

}  // namespace nce::data
