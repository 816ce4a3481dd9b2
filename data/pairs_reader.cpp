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

#include "data/pairs_delimited.h"
#include "data/pairs_json_lines.h"
#include "data/reader_support.h"
#include "data/text_cleaning.h"

namespace nce::data {
namespace {

// The parts of data/pairs_cells.h .. pairs_json_lines.h this file uses (named one by one: in a
// unity build the files of this folder share one translation unit).
using pairs_detail::BadRow;
using pairs_detail::Cell;
using pairs_detail::DelimitedRecords;
using pairs_detail::delimiter_name;
using pairs_detail::for_each_line;
using pairs_detail::is_blank;
using pairs_detail::kind_name;
using pairs_detail::kKeySkip;
using pairs_detail::kKeyStop;
using pairs_detail::kUtf8Bom;
using pairs_detail::lowercase;
using pairs_detail::parse_json_line;
using pairs_detail::read_delimited_rows;
using pairs_detail::read_json_rows;
using pairs_detail::shown;
using pairs_detail::trim;

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
