// Reading a pairs file (data/pairs_reader.h): JSON lines.
#pragma once
#include <functional>

#include "data/pairs_rows.h"
#include "engine/json_nesting.h"

namespace nce::data::pairs_detail {

// One JSON line's top-level keys and values, straight from nlohmann's SAX parser: no document
// is built, values nested inside a top-level value are only walked past, and `classify`
// decides per key where its value goes: an index into `cells`, kKeySkip (not kept), or
// kKeyStop (the line is bad; classify says why).
inline constexpr int64_t kKeySkip = -1;
inline constexpr int64_t kKeyStop = -2;

class TopLevelFields : public nlohmann::json_sax<json> {
public:
    TopLevelFields(std::vector<Cell>& cells, std::function<int64_t(const std::string&)> classify)
        : cells_(cells), classify_(std::move(classify)) {}

    bool stopped_at_key = false;
    std::string not_an_object;  // the top level's kind when it is not an object
    std::string parse_error_detail;

    bool null() override { return value(Cell::Kind::Null); }
    bool boolean(bool) override { return value(Cell::Kind::Bool); }
    bool number_integer(number_integer_t v) override { return value(Cell::Kind::Integer, std::to_string(v), double(v)); }
    bool number_unsigned(number_unsigned_t v) override {
        return value(Cell::Kind::Integer, std::to_string(v), double(v));
    }
    bool number_float(number_float_t v, const string_t&) override { return value(Cell::Kind::Float, "", v); }
    bool string(string_t& v) override { return value(Cell::Kind::String, std::move(v)); }
    bool binary(binary_t&) override { return value(Cell::Kind::Array); }
    bool start_object(std::size_t) override {
        if (depth_ == 1) value(Cell::Kind::Object);
        ++depth_;
        return true;
    }
    bool end_object() override {
        --depth_;
        return true;
    }
    bool start_array(std::size_t) override {
        if (depth_ == 0) {
            not_an_object = "an array";
            return false;
        }
        if (depth_ == 1) value(Cell::Kind::Array);
        ++depth_;
        return true;
    }
    bool end_array() override {
        --depth_;
        return true;
    }
    bool key(string_t& name) override {
        if (depth_ != 1) return true;
        target_ = classify_(name);
        if (target_ == kKeyStop) {
            stopped_at_key = true;
            return false;
        }
        return true;
    }
    bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& error) override {
        parse_error_detail = json_error_detail(error.what());
        return false;
    }

private:
    bool value(Cell::Kind kind, std::string text = {}, double number = 0) {
        if (depth_ == 0) {
            not_an_object = kind_name(kind);
            return false;
        }
        if (depth_ == 1 && target_ >= 0) {
            if (static_cast<size_t>(target_) >= cells_.size()) cells_.resize(static_cast<size_t>(target_) + 1);
            Cell& cell = cells_[static_cast<size_t>(target_)];
            cell.kind = kind;
            cell.text = std::move(text);
            cell.number = number;
        }
        return true;
    }

    std::vector<Cell>& cells_;
    std::function<int64_t(const std::string&)> classify_;
    int depth_ = 0;
    int64_t target_ = kKeySkip;
};

// Parses one JSON line (already known to be non-blank) with `classify`; a bad line throws
// BadRow. `key_problem` is what classify left when it stopped the parse.
inline void parse_json_line(std::string_view line, std::vector<Cell>& cells,
                     const std::function<int64_t(const std::string&)>& classify, const BadRow& key_problem) {
    size_t invalid = find_invalid_utf8(line);
    if (invalid != std::string_view::npos)
        throw BadRow{"invalid UTF-8", fmt::format("invalid UTF-8 at byte {} of the line; the file must be UTF-8 text",
                                                  invalid)};
    size_t too_deep = find_excess_json_nesting(line);
    if (too_deep != std::string_view::npos)
        throw BadRow{"invalid JSON", fmt::format("JSON nesting exceeds {} levels at byte {} of the line",
                                                 kMaxJsonNesting, too_deep)};
    TopLevelFields fields(cells, classify);
    bool parsed = json::sax_parse(line.begin(), line.end(), &fields);
    if (parsed) return;
    if (fields.stopped_at_key) throw key_problem;
    if (!fields.not_an_object.empty())
        throw BadRow{"not a JSON object", fmt::format("the line is {}; each line is one JSON object such as "
                                                      "{{\"anchor\": \"...\", \"positive\": \"...\"}}",
                                                      fields.not_an_object)};
    throw BadRow{"invalid JSON", fmt::format("not valid JSON: {}", fields.parse_error_detail)};
}

// Calls on_line(line_number, line) for each line that is not blank ('\r' before '\n' removed).
template <typename OnLine>
inline void for_each_line(std::string_view text, OnLine&& on_line) {
    int64_t number = 1;
    for (size_t begin = 0; begin < text.size(); ++number) {
        size_t end = text.find('\n', begin);
        if (end == std::string_view::npos) end = text.size();
        std::string_view line = text.substr(begin, end - begin);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (!is_blank(line)) on_line(number, line);
        begin = end + 1;
    }
}

inline void read_json_rows(std::string_view text, PairsFile& file, Leniency leniency) {
    ColumnSet columns(file.path, file.format);
    bool columns_known = false;
    std::optional<RowCollector> collector;
    std::vector<Cell> cells;
    std::vector<bool> seen;
    BadRow key_problem;
    std::optional<std::string> file_problem;
    int64_t lines = 0;

    // The first object's keys name the columns; later keys must be among them, once each.
    auto classify = [&](const std::string& name) -> int64_t {
        if (!columns_known) {
            file_problem = columns.add(name);
            if (file_problem) return kKeyStop;
            return static_cast<int64_t>(columns.size()) - 1;
        }
        int64_t index = columns.index_of(name);
        if (index < 0) {
            key_problem = {"columns differ from the first row's",
                           fmt::format("key '{}' is not among the first row's columns ({}); every row has the same "
                                       "keys",
                                       shown(name), shown(fmt::format("{}", fmt::join(file.columns, ", ")), 120))};
            return kKeyStop;
        }
        if (seen[static_cast<size_t>(index)]) {
            key_problem = {"columns differ from the first row's",
                           fmt::format("key '{}' appears twice; give each key once", shown(name))};
            return kKeyStop;
        }
        seen[static_cast<size_t>(index)] = true;
        return index;
    };

    for_each_line(text, [&](int64_t number, std::string_view line) {
        ++lines;
        for (Cell& cell : cells) cell.kind = Cell::Kind::Missing;
        std::fill(seen.begin(), seen.end(), false);
        try {
            parse_json_line(line, cells, classify, key_problem);
        } catch (const BadRow& bad) {
            if (file_problem) fail("{} line {}: {}", file.path, number, *file_problem);
            if (!columns_known) {  // the next object names the columns afresh
                columns = ColumnSet(file.path, file.format);
                cells.clear();
            }
            if (collector) collector->skip(number, bad);
            else skip_or_fail(file.report, leniency, bad.reason, fmt::format("{} line {}: {}", file.path, number,
                                                                             bad.detail));
            return;
        }
        if (!columns_known) {
            columns.finish(file);
            columns_known = true;
            cells.resize(columns.size());
            seen.assign(columns.size(), false);
            collector.emplace(file, columns, leniency);
        }
        for (size_t i = 0; i < columns.size(); ++i) {
            if (cells[i].kind != Cell::Kind::Missing) continue;
            collector->skip(number, {"columns differ from the first row's",
                                     fmt::format("no key '{}', which the first row has; every row has the same keys "
                                                 "(a missing negative can be null)",
                                                 columns.name(i))});
            return;
        }
        collector->add(cells, number);
    });
    NCE_CHECK(lines > 0, "{}: nothing but blank lines; write one JSON object per line", file.path);
    if (collector) collector->finish();  // else every line was bad: read_pairs_file says so
}

}  // namespace nce::data::pairs_detail
