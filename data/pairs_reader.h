// A practitioner's own training data, as sentence-transformers users keep it: one example per
// row, in columns named
//
//   anchor                    the query (required)
//   positive                  a text that answers it (required)
//   negative, or negative_1 .. negative_K
//                             texts that do not answer it (optional; numbered from 1, no gaps)
//   score                     a number: how well `positive` answers `anchor` (optional)
//   query_id                  rows with one query_id are one query (optional; without it, rows
//                             with the same anchor text are)
//
// Three formats, told apart by the file's extension unless given:
//   JSON lines (.jsonl, .ndjson)  one object per line: {"anchor": "...", "positive": "...", ...};
//                                 text columns are strings, score a number; blank lines skipped
//   CSV (.csv), TSV (.tsv)        a header line naming the columns, then one row per line;
//                                 fields may be quoted as RFC 4180 says ("a ""b""", line breaks
//                                 inside quotes); a UTF-8 byte order mark is skipped
// Text must be UTF-8. The columns a file has are the same on every row (JSON lines: the first
// row's keys; a later row missing one, or adding one, is a bad row).
//
// A bad file (a required column missing, an unknown column, nothing but the header) stops the
// read with one line naming the file and the fix. A bad row (a field count that differs from
// the header's, an empty anchor or positive, a score that is not a finite number, invalid UTF-8,
// a query_id whose anchor text differs from its first row's) stops a strict read naming the
// file and line; a lenient read counts it and goes on.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/dataset.h"

namespace nce::data {

enum class PairsFormat { JsonLines, Csv, Tsv };

// `given`: "jsonl", "csv", "tsv", or "" to tell by the extension of `path`. Throws one line
// naming the file when neither says.
PairsFormat pairs_format(const std::string& path, const std::string& given);
const char* pairs_format_name(PairsFormat format);  // "jsonl", "csv", "tsv"

struct PairsRow {
    int64_t line = 0;                    // where the row starts in the file (1 = first line)
    std::string query_key;               // query_id when the file has one, else the anchor text
    std::string anchor;
    std::string positive;
    std::vector<std::string> negatives;  // the negative columns in order; empty cells left out
    double score = 1.0;                  // the score column, 1 when there is none
};

struct PairsFile {
    std::string path;
    PairsFormat format = PairsFormat::JsonLines;
    std::vector<std::string> columns;  // as the file names them, in its order
    int64_t negative_columns = 0;      // how many negative columns (negative counts as 1)
    bool has_score = false;
    bool has_query_id = false;
    std::vector<PairsRow> rows;
    ReadReport report;                 // records: "rows", "queries"; skipped rows by reason
};

PairsFile read_pairs_file(const std::string& path, PairsFormat format, Leniency leniency);

// The rows as a retrieval data set named after the file:
//   query    one per distinct query_key, in order of first appearance; id: the query_id, or
//            "line N" (its first row); group: the query_key (so a split keeps a query whole)
//   passage  one per distinct text among the positives and negatives, in order of first
//            appearance; id: "passage N" (from 1); group: "query N", its first query's
//            number from 1 (not its key, so a long anchor is not copied per passage)
//   relevance query -> each of its positives: score (the score column, else 1), rank by score
//            within the query (0 = best, ties in file order); query -> each of its negatives:
//            hard_negative, score 0, ranked after its positives. A text that is both a
//            positive and a negative of one query stays a positive only.
RetrievalDataset pairs_dataset(const PairsFile& file);

// Passages for a corpus that evaluation searches besides the positives (--corpus): a .txt
// file holds one text per line (blank lines skipped); JSON lines, CSV and TSV (by extension,
// or `given`) hold them in a column named "text". Throws naming the file and line on
// invalid UTF-8, a missing text column or no text at all.
std::vector<std::string> read_corpus_texts(const std::string& path, const std::string& given);

}  // namespace nce::data
