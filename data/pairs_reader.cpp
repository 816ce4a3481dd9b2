#include "data/pairs_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "data/reader_support.h"
#include "data/text_cleaning.h"
#include "engine/json_nesting.h"

namespace nce::data {
namespace {

using nlohmann::json;

constexpr std::string_view kUtf8Bom = "\xEF\xBB\xBF";
constexpr const char* kAllowedColumns =
    "anchor, positive, negative or negative_1 .. negative_K (numbered from 1), score, query_id";

// A score written as text longer than this is not a number anyone means (and keeps strtod's
// work bounded).
constexpr size_t kMaxScoreTextBytes = 100;

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v'; }

bool is_blank(std::string_view text) {
    return std::all_of(text.begin(), text.end(), [](char c) { return is_space(c); });
}

std::string_view trim(std::string_view text) {
    while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
    while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
    return text;
}

std::string lowercase(std::string text) {
    for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return text;
}

// `text` for a one-line message: at most `max_code_points` code points (looking at no more
// than the bytes those can take, so that showing a field of megabytes costs nothing), cut
// before any invalid UTF-8, control characters escaped.
std::string shown(std::string_view text, size_t max_code_points = 40) {
    std::string_view prefix = text.substr(0, 4 * max_code_points + 4);
    size_t invalid = find_invalid_utf8(prefix);
    bool cut = prefix.size() < text.size();
    if (invalid != std::string_view::npos) {
        prefix = prefix.substr(0, invalid);
        cut = true;
    }
    std::string valid = truncate_utf8(prefix, max_code_points);
    if (cut && valid.size() == prefix.size()) valid += "...";
    std::string out;
    for (char c : valid) {
        if (c == '\n') out += "\\n";
        else if (c == '\r') out += "\\r";
        else if (c == '\t') out += "\\t";
        else if (static_cast<unsigned char>(c) < 0x20) out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
        else out += c;
    }
    return out;
}

// The part of a nlohmann exception's what() after "[json.exception.parse_error.101] ",
// shortened (the last token read can be a whole unterminated string).
std::string json_error_detail(const std::string& what) {
    std::string_view detail = what;
    size_t bracket = detail.find("] ");
    if (bracket != std::string_view::npos) detail.remove_prefix(bracket + 2);
    return shown(detail, 160);
}

// ---- Cells: one row's values, whatever the format -----------------------------------------

struct Cell {
    enum class Kind { Missing, Null, Bool, Integer, Float, String, Array, Object };
    Kind kind = Kind::Missing;
    std::string text;  // String: the text; Integer: its decimal form
    double number = 0;  // Integer, Float
};

const char* kind_name(Cell::Kind kind) {
    switch (kind) {
        case Cell::Kind::Missing: return "missing";
        case Cell::Kind::Null: return "null";
        case Cell::Kind::Bool: return "a boolean";
        case Cell::Kind::Integer:
        case Cell::Kind::Float: return "a number";
        case Cell::Kind::String: return "a string";
        case Cell::Kind::Array: return "an array";
        case Cell::Kind::Object: return "an object";
    }
    return "?";
}

// Why a row cannot be used: `reason` is what ReadReport::skipped counts, `detail` the line's
// own story (with the fix).
struct BadRow {
    std::string reason;
    std::string detail;
};

// ---- Column names ---------------------------------------------------------------------------

enum class Role { Anchor, Positive, Negative, Score, QueryId };

struct ColumnRole {
    Role role;
    int64_t number = 0;  // negative_N: N; plain "negative": 0
};

std::optional<ColumnRole> role_of(std::string_view name) {
    if (name == "anchor") return ColumnRole{Role::Anchor};
    if (name == "positive") return ColumnRole{Role::Positive};
    if (name == "negative") return ColumnRole{Role::Negative, 0};
    if (name == "score") return ColumnRole{Role::Score};
    if (name == "query_id") return ColumnRole{Role::QueryId};
    constexpr std::string_view prefix = "negative_";
    if (name.substr(0, prefix.size()) != prefix) return std::nullopt;
    std::string_view digits = name.substr(prefix.size());
    if (digits.empty() || digits.size() > 9 || digits.front() == '0') return std::nullopt;
    int64_t number = 0;
    for (char c : digits) {
        if (c < '0' || c > '9') return std::nullopt;
        number = number * 10 + (c - '0');
    }
    return ColumnRole{Role::Negative, number};
}

// The columns of a pairs file, checked one name at a time as the header (or the first JSON
// line) gives them, so that a header of a million bad names stops at the first.
class ColumnSet {
public:
    ColumnSet(const std::string& path, PairsFormat format)
        : path_(path), format_(format), where_(format == PairsFormat::JsonLines ? "the first row" : "the header") {}

    // Adds the next column, or returns what is wrong with `name` (for a one-line file error,
    // after the file's name).
    std::optional<std::string> add(std::string_view name) {
        if (name.empty())
            return fmt::format("column {} of {} has no name; name every column ({})", names_.size() + 1, where_,
                               kAllowedColumns);
        std::optional<ColumnRole> role = role_of(name);
        if (!role) {
            std::string hint;
            if (format_ == PairsFormat::Csv && name.find('\t') != std::string_view::npos)
                hint = " (the names are separated by tabs: give the format tsv, or name the file .tsv)";
            if (format_ == PairsFormat::Tsv && name.find(',') != std::string_view::npos)
                hint = " (the names are separated by commas: give the format csv, or name the file .csv)";
            return fmt::format("unknown column '{}'{}; a pairs file's columns are {}", shown(name), hint,
                               kAllowedColumns);
        }
        if (index_.count(std::string(name)))
            return fmt::format("column '{}' appears twice in {}; keep one of them", shown(name), where_);
        index_.emplace(std::string(name), static_cast<int64_t>(names_.size()));
        names_.emplace_back(name);
        roles_.push_back(*role);
        return std::nullopt;
    }

    // After the last name: the checks on the set as a whole. Throws.
    void finish(PairsFile& file) {
        bool anchor = false, positive = false, plain_negative = false;
        int64_t numbered = 0, highest = 0;
        for (const ColumnRole& role : roles_) {
            anchor |= role.role == Role::Anchor;
            positive |= role.role == Role::Positive;
            file.has_score |= role.role == Role::Score;
            file.has_query_id |= role.role == Role::QueryId;
            if (role.role == Role::Negative) {
                if (role.number == 0) plain_negative = true;
                else {
                    ++numbered;
                    highest = std::max(highest, role.number);
                }
            }
        }
        std::string listed = shown(fmt::format("{}", fmt::join(names_, ", ")), 120);
        for (auto [present, name] : {std::pair{anchor, "anchor"}, std::pair{positive, "positive"}})
            NCE_CHECK(present, "{}: no '{}' column (the columns are: {}); a pairs file needs anchor and positive columns",
                      path_, name, listed);
        NCE_CHECK(!(plain_negative && numbered > 0),
                  "{}: has both a 'negative' column and numbered ones; use either negative or negative_1 .. negative_K",
                  path_);
        if (highest != numbered) {  // names are distinct, so the numbers are: a gap below `highest`
            std::vector<bool> seen(static_cast<size_t>(numbered) + 1, false);
            for (const ColumnRole& role : roles_)
                if (role.role == Role::Negative && role.number <= numbered) seen[static_cast<size_t>(role.number)] = true;
            int64_t missing = 1;
            while (seen[static_cast<size_t>(missing)]) ++missing;
            fail("{}: negative columns must be numbered 1 .. K without gaps; negative_{} is missing (there is a "
                 "negative_{})",
                 path_, missing, highest);
        }
        file.columns = names_;
        file.negative_columns = plain_negative ? 1 : numbered;
        negative_order_.clear();
        for (size_t i = 0; i < roles_.size(); ++i)
            if (roles_[i].role == Role::Negative) negative_order_.push_back(static_cast<int64_t>(i));
        std::sort(negative_order_.begin(), negative_order_.end(), [&](int64_t a, int64_t b) {
            return roles_[static_cast<size_t>(a)].number < roles_[static_cast<size_t>(b)].number;
        });
    }

    size_t size() const { return names_.size(); }
    const std::string& name(size_t i) const { return names_[i]; }
    const ColumnRole& role(size_t i) const { return roles_[i]; }
    const std::vector<int64_t>& negative_order() const { return negative_order_; }
    int64_t index_of(const std::string& name) const {
        auto found = index_.find(name);
        return found == index_.end() ? -1 : found->second;
    }

private:
    std::string path_;
    PairsFormat format_;
    const char* where_;
    std::vector<std::string> names_;
    std::vector<ColumnRole> roles_;
    std::unordered_map<std::string, int64_t> index_;
    std::vector<int64_t> negative_order_;  // column indices of the negatives, by number
};

// ---- Rows -----------------------------------------------------------------------------------

std::optional<double> parse_score_text(std::string_view text) {
    text = trim(text);
    if (text.empty() || text.size() > kMaxScoreTextBytes) return std::nullopt;
    if (text.front() == '+') text.remove_prefix(1);
    double value = 0;
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
    return value;
}

// Turns checked cells into rows and keeps the file's report.
class RowCollector {
public:
    RowCollector(PairsFile& file, const ColumnSet& columns, Leniency leniency)
        : file_(file),
          columns_(columns),
          leniency_(leniency),
          first_row_of_query_(16, RowKeyHash{&file.rows}, RowKeyEqual{&file.rows}) {}

    void skip(int64_t line, const BadRow& bad) {
        skip_or_fail(file_.report, leniency_, bad.reason, fmt::format("{} line {}: {}", file_.path, line, bad.detail));
    }

    // The row on `line` from cells[i] = the value of column i.
    void add(const std::vector<Cell>& cells, int64_t line) {
        try {
            file_.rows.push_back(build(cells, line));
        } catch (const BadRow& bad) {
            skip(line, bad);
            return;
        }
        PairsRow& row = file_.rows.back();
        auto [first, inserted] = first_row_of_query_.insert(file_.rows.size() - 1);
        if (!inserted && file_.rows[*first].anchor != row.anchor) {
            const PairsRow& earlier = file_.rows[*first];
            BadRow bad{"query_id with another anchor",
                       fmt::format("query_id '{}' has the anchor '{}', but on line {} it has '{}'; one query_id is one "
                                   "query: give its rows the same anchor, or give this row another query_id",
                                   shown(row.query_key), shown(row.anchor), earlier.line, shown(earlier.anchor))};
            file_.rows.pop_back();
            skip(line, bad);
        }
    }

    void finish() {
        file_.report.records["rows"] = static_cast<int64_t>(file_.rows.size());
        file_.report.records["queries"] = static_cast<int64_t>(first_row_of_query_.size());
    }

private:
    // The cell's text, checked: a string of valid UTF-8 (or null, where `allow_null`: "").
    const std::string& text_of(const Cell& cell, size_t column, bool allow_null) const {
        static const std::string empty;
        const std::string& name = columns_.name(column);
        if (cell.kind == Cell::Kind::Null && allow_null) return empty;
        if (cell.kind != Cell::Kind::String)
            throw BadRow{"text that is not a string", fmt::format("'{}' is {}; text columns hold strings", name,
                                                                  kind_name(cell.kind))};
        size_t invalid = find_invalid_utf8(cell.text);
        if (invalid != std::string::npos)
            throw BadRow{"invalid UTF-8", fmt::format("invalid UTF-8 in '{}' at byte {} of the field; the file must be "
                                                      "UTF-8 text",
                                                      name, invalid)};
        // A NUL byte is valid UTF-8 but no text: the tokenizer and every C string would cut the
        // text there, and it is the mark of a binary file or a broken export.
        size_t nul = cell.text.find('\0');
        if (nul != std::string::npos)
            throw BadRow{"NUL byte in a text", fmt::format("a NUL byte in '{}' at byte {} of the field; texts must be "
                                                           "plain UTF-8 text (is this a binary file?)",
                                                           name, nul)};
        return cell.text;
    }

    PairsRow build(const std::vector<Cell>& cells, int64_t line) const {
        PairsRow row;
        row.line = line;
        std::string query_id;
        for (size_t i = 0; i < columns_.size(); ++i) {
            const Cell& cell = cells[i];
            switch (columns_.role(i).role) {
                case Role::Anchor:
                    row.anchor = text_of(cell, i, false);
                    break;
                case Role::Positive:
                    row.positive = text_of(cell, i, false);
                    break;
                case Role::Negative:
                    text_of(cell, i, true);  // checked here, kept below in the columns' numbered order
                    break;
                case Role::Score: {
                    std::optional<double> score;
                    if (cell.kind == Cell::Kind::Integer || cell.kind == Cell::Kind::Float) score = cell.number;
                    if (cell.kind == Cell::Kind::String) score = parse_score_text(cell.text);
                    if (!score || !std::isfinite(*score)) {
                        std::string what = cell.kind == Cell::Kind::String
                                               ? fmt::format("'{}'", shown(cell.text))
                                               : std::string(kind_name(cell.kind));
                        throw BadRow{"score that is not a finite number",
                                     fmt::format("score {} is not a finite number; give a number such as 0.8", what)};
                    }
                    row.score = *score;
                    break;
                }
                case Role::QueryId:
                    if (cell.kind == Cell::Kind::Integer) query_id = cell.text;
                    else if (cell.kind == Cell::Kind::String) query_id = text_of(cell, i, false);
                    else
                        throw BadRow{"bad query_id", fmt::format("query_id is {}; give a string or an integer",
                                                                 kind_name(cell.kind))};
                    if (is_blank(query_id))
                        throw BadRow{"bad query_id", "query_id is empty; give every row its query's id"};
                    break;
            }
        }
        if (is_blank(row.anchor) || is_blank(row.positive))
            throw BadRow{"empty anchor or positive",
                         fmt::format("the {} is empty; every row needs an anchor and a positive text",
                                     is_blank(row.anchor) ? "anchor" : "positive")};
        for (int64_t column : columns_.negative_order()) {
            const Cell& cell = cells[static_cast<size_t>(column)];
            if (cell.kind == Cell::Kind::String && !is_blank(cell.text)) row.negatives.push_back(cell.text);
        }
        row.query_key = file_.has_query_id ? std::move(query_id) : row.anchor;
        return row;
    }

    PairsFile& file_;
    const ColumnSet& columns_;
    Leniency leniency_;
    // The first row of each query, as an index into rows, hashed and compared by its query_key
    // (so that the keys are not copied).
    struct RowKeyHash {
        const std::vector<PairsRow>* rows;
        size_t operator()(size_t row) const { return std::hash<std::string>()((*rows)[row].query_key); }
    };
    struct RowKeyEqual {
        const std::vector<PairsRow>* rows;
        bool operator()(size_t a, size_t b) const { return (*rows)[a].query_key == (*rows)[b].query_key; }
    };
    std::unordered_set<size_t, RowKeyHash, RowKeyEqual> first_row_of_query_;
};

// ---- CSV / TSV ------------------------------------------------------------------------------

// RFC 4180 records, one at a time, in one pass over the text: fields separated by
// `delimiter`, records by LF or CRLF; a field that starts with '"' runs to the next lone '"'
// (delimiters and line breaks inside it are text, "" is one quote). A quote inside an
// unquoted field is text; text after a closing quote makes the record malformed.
class DelimitedRecords {
public:
    struct Info {
        int64_t line = 0;       // where the record starts
        size_t fields = 0;
        bool blank = false;     // nothing but whitespace, no quotes
        bool text_after_quote = false;
    };

    DelimitedRecords(std::string_view text, char delimiter, const std::string& path)
        : text_(text), delimiter_(delimiter), path_(path) {}

    // Skips lines that hold only whitespace (before the header).
    void skip_blank_lines() {
        while (position_ < text_.size()) {
            size_t end = text_.find('\n', position_);
            std::string_view line = text_.substr(position_, end == std::string_view::npos ? end : end - position_);
            if (!is_blank(line)) return;
            position_ = end == std::string_view::npos ? text_.size() : end + 1;
            ++line_;
        }
    }

    bool at_end() const { return position_ >= text_.size(); }

    // Reads the next record, calling on_field(index, value) for each field; false at the end.
    // Throws at a quoted field the text ends inside.
    template <typename OnField>
    bool next(Info& info, OnField&& on_field) {
        if (at_end()) return false;
        info = Info{line_, 0, false, false};
        enum class State { FieldStart, Unquoted, Quoted, AfterQuote } state = State::FieldStart;
        bool any_quote = false;
        int64_t quote_line = 0;
        field_.clear();
        auto end_field = [&] {
            on_field(info.fields, std::string_view(field_));
            ++info.fields;
            field_.clear();
        };
        while (true) {
            if (position_ >= text_.size()) {
                if (state == State::Quoted)
                    fail("{} line {}: a quoted field starts here and the file ends inside it; close the quote, and "
                         "write a quote inside a quoted field as two (\"\")",
                         path_, quote_line);
                break;
            }
            char c = text_[position_];
            if (state == State::Quoted) {
                if (c == '"') {
                    if (position_ + 1 < text_.size() && text_[position_ + 1] == '"') {
                        field_ += '"';
                        position_ += 2;
                    } else {
                        state = State::AfterQuote;
                        ++position_;
                    }
                } else {
                    // Copy up to the next quote at once.
                    size_t quote = text_.find('"', position_);
                    size_t stop = quote == std::string_view::npos ? text_.size() : quote;
                    std::string_view chunk = text_.substr(position_, stop - position_);
                    line_ += std::count(chunk.begin(), chunk.end(), '\n');
                    field_ += chunk;
                    position_ = stop;
                }
                continue;
            }
            if (state == State::FieldStart && c == '"') {
                state = State::Quoted;
                any_quote = true;
                quote_line = line_;
                ++position_;
                continue;
            }
            if (c == delimiter_) {
                end_field();
                state = State::FieldStart;
                ++position_;
                continue;
            }
            bool crlf = c == '\r' && position_ + 1 < text_.size() && text_[position_ + 1] == '\n';
            if (c == '\n' || crlf) {
                position_ += crlf ? 2 : 1;
                ++line_;
                break;
            }
            if (state == State::AfterQuote) info.text_after_quote = true;
            state = State::Unquoted;
            field_ += c;
            ++position_;
        }
        info.blank = info.fields == 0 && !any_quote && is_blank(field_);
        end_field();
        return true;
    }

private:
    std::string_view text_;
    char delimiter_;
    const std::string& path_;
    size_t position_ = 0;
    int64_t line_ = 1;
    std::string field_;
};

const char* delimiter_name(char delimiter) { return delimiter == '\t' ? "tab" : "comma"; }

void read_delimited_rows(std::string_view text, PairsFile& file, Leniency leniency) {
    char delimiter = file.format == PairsFormat::Tsv ? '\t' : ',';
    DelimitedRecords records(text, delimiter, file.path);
    records.skip_blank_lines();
    NCE_CHECK(!records.at_end(), "{}: no header line; the first line names the columns ({})", file.path,
              kAllowedColumns);

    ColumnSet columns(file.path, file.format);
    DelimitedRecords::Info info;
    records.next(info, [&](size_t, std::string_view name) {
        if (auto error = columns.add(trim(name))) fail("{}: {}", file.path, *error);
    });
    NCE_CHECK(!info.text_after_quote,
              "{} line {}: text after a closing quote in the header; quote a whole name (\"query_id\") or none of it",
              file.path, info.line);
    columns.finish(file);

    RowCollector collector(file, columns, leniency);
    std::vector<Cell> cells(columns.size());
    int64_t data_rows = 0;
    while (records.next(info, [&](size_t index, std::string_view value) {
        if (index >= cells.size()) return;
        cells[index].kind = Cell::Kind::String;
        cells[index].text.assign(value);
    })) {
        if (info.blank) continue;
        ++data_rows;
        if (info.fields != columns.size()) {
            collector.skip(info.line,
                           {"wrong number of fields",
                            fmt::format("{} field(s) where the header has {} columns; quote a field that holds a {}, "
                                        "and give every row all the columns",
                                        info.fields, columns.size(), delimiter_name(delimiter))});
            continue;
        }
        if (info.text_after_quote) {
            collector.skip(info.line,
                           {"text after a closing quote",
                            "text follows a quoted field's closing quote; quote the whole field and write a quote "
                            "inside it as two (\"a \"\"b\"\" c\")"});
            continue;
        }
        collector.add(cells, info.line);
    }
    collector.finish();
    NCE_CHECK(data_rows > 0, "{}: nothing but the header; add rows below it, one per (anchor, positive) pair",
              file.path);
}

// ---- JSON lines -----------------------------------------------------------------------------

// One JSON line's top-level keys and values, straight from nlohmann's SAX parser: no document
// is built, values nested inside a top-level value are only walked past, and `classify`
// decides per key where its value goes: an index into `cells`, kKeySkip (not kept), or
// kKeyStop (the line is bad; classify says why).
constexpr int64_t kKeySkip = -1;
constexpr int64_t kKeyStop = -2;

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
void parse_json_line(std::string_view line, std::vector<Cell>& cells,
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
void for_each_line(std::string_view text, OnLine&& on_line) {
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

void read_json_rows(std::string_view text, PairsFile& file, Leniency leniency) {
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

// The text after a UTF-8 byte order mark; a UTF-16 one is an error.
std::string_view without_bom(std::string_view text, const std::string& path) {
    NCE_CHECK(!(text.substr(0, 2) == "\xFF\xFE" || text.substr(0, 2) == "\xFE\xFF"),
              "{}: the file is UTF-16 text; save it as UTF-8", path);
    if (text.substr(0, kUtf8Bom.size()) == kUtf8Bom) text.remove_prefix(kUtf8Bom.size());
    return text;
}

std::string extension_of(const std::string& path) {
    return lowercase(std::filesystem::path(path).extension().string());
}

}  // namespace

PairsFormat pairs_format(const std::string& path, const std::string& given) {
    std::string name = lowercase(given);
    if (name == "jsonl") return PairsFormat::JsonLines;
    if (name == "csv") return PairsFormat::Csv;
    if (name == "tsv") return PairsFormat::Tsv;
    NCE_CHECK(name.empty(), "{}: unknown format '{}'; the formats are jsonl, csv and tsv", path, shown(given));
    std::string extension = extension_of(path);
    if (extension == ".jsonl" || extension == ".ndjson") return PairsFormat::JsonLines;
    if (extension == ".csv") return PairsFormat::Csv;
    if (extension == ".tsv") return PairsFormat::Tsv;
    fail("{}: cannot tell the format from the extension '{}'; name the file .jsonl, .ndjson, .csv or .tsv, or give "
         "the format (jsonl, csv or tsv)",
         path, shown(extension));
}

const char* pairs_format_name(PairsFormat format) {
    switch (format) {
        case PairsFormat::JsonLines: return "jsonl";
        case PairsFormat::Csv: return "csv";
        case PairsFormat::Tsv: return "tsv";
    }
    return "?";
}

PairsFile read_pairs_file(const std::string& path, PairsFormat format, Leniency leniency) {
    auto start = std::chrono::steady_clock::now();
    std::string contents = read_source_file(path);
    std::string_view text = without_bom(contents, path);
    PairsFile file;
    file.path = path;
    file.format = format;
    file.report.records["rows"] = 0;
    file.report.records["queries"] = 0;
    if (format == PairsFormat::JsonLines) read_json_rows(text, file, leniency);
    else read_delimited_rows(text, file, leniency);
    if (file.rows.empty()) {
        int64_t skipped = 0;
        for (const auto& [reason, count] : file.report.skipped) skipped += count;
        fail("{}: no usable rows ({} skipped as bad{}{})", path, skipped,
             file.report.skipped_examples.empty() ? "" : "; the first: ",
             file.report.skipped_examples.empty() ? "" : file.report.skipped_examples.front());
    }
    file.report.seconds = seconds_since(start);
    return file;
}

RetrievalDataset pairs_dataset(const PairsFile& file) {
    RetrievalDataset dataset;
    dataset.name = file.path;
    dataset.report = file.report;

    // Queries and passages in order of first appearance; keys view the rows' strings, which
    // do not move while `file` lives. A query's rows are chained in file order (first_row,
    // next_row); row r's passages, positive first, are passages[passage_begin[r] ..
    // passage_begin[r + 1]).
    constexpr size_t kNone = static_cast<size_t>(-1);
    std::unordered_map<std::string_view, int64_t> query_of_key, passage_of_text;
    std::vector<size_t> first_row, last_row, next_row(file.rows.size(), kNone);
    std::vector<size_t> passage_begin{0};
    std::vector<int64_t> passages;
    passage_begin.reserve(file.rows.size() + 1);
    // A passage's group is its first query's number, not its text: a long anchor is not
    // copied into each of its many passages.
    auto add_passage = [&](const std::string& text, size_t query) {
        auto [found, inserted] = passage_of_text.emplace(text, static_cast<int64_t>(dataset.passages.size()));
        if (inserted)
            dataset.passages.push_back({fmt::format("passage {}", dataset.passages.size() + 1), text,
                                        fmt::format("query {}", query + 1)});
        passages.push_back(found->second);
    };
    for (size_t r = 0; r < file.rows.size(); ++r) {
        const PairsRow& row = file.rows[r];
        auto [found, inserted] = query_of_key.emplace(row.query_key, static_cast<int64_t>(dataset.queries.size()));
        auto q = static_cast<size_t>(found->second);
        if (inserted) {
            std::string id = file.has_query_id ? row.query_key : fmt::format("line {}", row.line);
            dataset.queries.push_back({std::move(id), row.anchor, row.query_key});
            first_row.push_back(r);
            last_row.push_back(r);
        } else {
            next_row[last_row[q]] = r;
            last_row[q] = r;
        }
        add_passage(row.positive, q);
        for (const std::string& negative : row.negatives) add_passage(negative, q);
        passage_begin.push_back(passages.size());
    }

    // Per query: its positives (once each, the first row's score) by score, best first, ties
    // in file order; then its negatives (once each, none that is also a positive) in file order.
    std::vector<int64_t> positive_of(dataset.passages.size(), -1), negative_of(dataset.passages.size(), -1);
    struct Positive {
        int64_t passage;
        double score;
    };
    std::vector<Positive> positives;
    for (size_t q = 0; q < dataset.queries.size(); ++q) {
        auto query = static_cast<int64_t>(q);
        positives.clear();
        for (size_t r = first_row[q]; r != kNone; r = next_row[r]) {
            int64_t passage = passages[passage_begin[r]];
            if (positive_of[static_cast<size_t>(passage)] == query) continue;
            positive_of[static_cast<size_t>(passage)] = query;
            positives.push_back({passage, file.rows[r].score});
        }
        std::stable_sort(positives.begin(), positives.end(),
                         [](const Positive& a, const Positive& b) { return a.score > b.score; });
        int64_t rank = 0;
        for (const Positive& positive : positives) {
            Relevance entry;
            entry.query = query;
            entry.passage = positive.passage;
            entry.score = positive.score;
            entry.rank = rank++;
            dataset.relevance.push_back(entry);
        }
        for (size_t r = first_row[q]; r != kNone; r = next_row[r]) {
            for (size_t k = passage_begin[r] + 1; k < passage_begin[r + 1]; ++k) {
                auto passage = static_cast<size_t>(passages[k]);
                if (positive_of[passage] == query || negative_of[passage] == query) continue;
                negative_of[passage] = query;
                Relevance entry;
                entry.query = query;
                entry.passage = static_cast<int64_t>(passage);
                entry.score = 0;
                entry.rank = rank++;
                entry.hard_negative = true;
                dataset.relevance.push_back(entry);
            }
        }
    }
    return dataset;
}

std::vector<std::string> read_corpus_texts(const std::string& path, const std::string& given) {
    std::string name = lowercase(given);
    bool plain_text = name == "txt" || (name.empty() && extension_of(path) == ".txt");
    std::optional<PairsFormat> format;
    if (!plain_text) {
        try {
            format = pairs_format(path, name);
        } catch (const Error&) {
            fail("{}: cannot tell the corpus format{}; name the file .txt (one text per line), .jsonl, .csv or .tsv (a "
                 "\"text\" column), or give the format (txt, jsonl, csv or tsv)",
                 path, name.empty() ? fmt::format(" from the extension '{}'", shown(extension_of(path)))
                                    : fmt::format(" '{}'", shown(given)));
        }
    }
    std::string contents = read_source_file(path);
    std::string_view text = without_bom(contents, path);
    std::vector<std::string> texts;
    auto keep = [&](std::string_view value, int64_t line) {
        size_t invalid = find_invalid_utf8(value);
        NCE_CHECK(invalid == std::string_view::npos,
                  "{} line {}: invalid UTF-8 at byte {} of the text; the file must be UTF-8 text", path, line, invalid);
        if (!is_blank(value)) texts.emplace_back(value);
    };

    if (plain_text) {
        for_each_line(text, [&](int64_t line, std::string_view value) { keep(value, line); });
    } else if (*format == PairsFormat::JsonLines) {
        std::vector<Cell> cells(1);
        bool seen_text = false;
        BadRow twice{"", "key 'text' appears twice; give it once"};
        auto classify = [&](const std::string& key) -> int64_t {
            if (key != "text") return kKeySkip;
            if (seen_text) return kKeyStop;
            seen_text = true;
            return 0;
        };
        for_each_line(text, [&](int64_t line, std::string_view value) {
            cells[0].kind = Cell::Kind::Missing;
            seen_text = false;
            try {
                parse_json_line(value, cells, classify, twice);
            } catch (const BadRow& bad) {
                fail("{} line {}: {}", path, line, bad.detail);
            }
            NCE_CHECK(cells[0].kind == Cell::Kind::String,
                      "{} line {}: \"text\" is {}; each line of a corpus is an object with a \"text\" string", path, line,
                      cells[0].kind == Cell::Kind::Missing ? "missing" : kind_name(cells[0].kind));
            keep(cells[0].text, line);
        });
    } else {
        char delimiter = *format == PairsFormat::Tsv ? '\t' : ',';
        DelimitedRecords records(text, delimiter, path);
        records.skip_blank_lines();
        NCE_CHECK(!records.at_end(), "{}: no header line; the first line names the columns, one of them \"text\"", path);
        DelimitedRecords::Info info;
        int64_t text_column = -1;
        records.next(info, [&](size_t index, std::string_view column) {
            if (trim(column) != "text") return;
            NCE_CHECK(text_column < 0, "{}: column 'text' appears twice in the header; keep one of them", path);
            text_column = static_cast<int64_t>(index);
        });
        size_t columns = info.fields;
        NCE_CHECK(text_column >= 0, "{}: no 'text' column in the header; a corpus file holds its passages in a column "
                  "named text (or use a .txt file, one text per line)", path);
        std::string value;
        while (records.next(info, [&](size_t index, std::string_view field) {
            if (static_cast<int64_t>(index) == text_column) value.assign(field);
        })) {
            if (info.blank) continue;
            NCE_CHECK(info.fields == columns,
                      "{} line {}: {} field(s) where the header has {} columns; quote a field that holds a {}", path,
                      info.line, info.fields, columns, delimiter_name(delimiter));
            NCE_CHECK(!info.text_after_quote,
                      "{} line {}: text follows a quoted field's closing quote; quote the whole field and write a "
                      "quote inside it as two (\"\")",
                      path, info.line);
            keep(value, info.line);
        }
    }
    NCE_CHECK(!texts.empty(), "{}: no text at all; a corpus needs at least one passage", path);
    return texts;
}

}  // namespace nce::data
