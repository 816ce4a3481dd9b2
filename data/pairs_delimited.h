// Reading a pairs file (data/pairs_reader.h): CSV and TSV.
#pragma once
#include "data/pairs_rows.h"

namespace nce::data::pairs_detail {

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

inline const char* delimiter_name(char delimiter) { return delimiter == '\t' ? "tab" : "comma"; }

inline void read_delimited_rows(std::string_view text, PairsFile& file, Leniency leniency) {
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

}  // namespace nce::data::pairs_detail
