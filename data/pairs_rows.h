// Reading a pairs file (data/pairs_reader.h): checked cells made rows, and the file's report.
#pragma once
#include <charconv>
#include <optional>
#include <unordered_set>
#include <utility>

#include "data/pairs_columns.h"

namespace nce::data::pairs_detail {

inline std::optional<double> parse_score_text(std::string_view text) {
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

}  // namespace nce::data::pairs_detail
