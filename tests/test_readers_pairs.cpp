// The pairs reader (data/pairs_reader.h): a practitioner's own anchor/positive/negative files
// as JSON lines, CSV and TSV, the retrieval data set made from them, and corpus texts.
// Fixtures are written by the tests into temporary files.
//
// The "... in one pass" tests read hostile input of 2 MB (a field of quotes, one long line)
// and check it takes well under 2 s; a reader going back over the field for every byte
// would take hours. Nothing else is timed.
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>
#include <vector>

#include "data/pairs_reader.h"
#include "tests/test_helpers.h"

namespace {

namespace fs = std::filesystem;
using namespace nce;
using namespace nce::data;
using nce::testing::TemporaryFile;

PairsFile read_as(const std::string& contents, const std::string& extension, Leniency leniency = Leniency::Strict) {
    TemporaryFile file(contents, extension);
    return read_pairs_file(file.path(), pairs_format(file.path(), ""), leniency);
}

// The rows, without the file name: (line, query_key, anchor, positive, negatives, score).
using RowTuple = std::tuple<int64_t, std::string, std::string, std::string, std::vector<std::string>, double>;
std::vector<RowTuple> row_tuples(const PairsFile& file) {
    std::vector<RowTuple> rows;
    for (const PairsRow& row : file.rows)
        rows.emplace_back(row.line, row.query_key, row.anchor, row.positive, row.negatives, row.score);
    return rows;
}

// The relevance entries as (query id, passage id, score, rank, hard_negative), in order.
using RelevanceTuple = std::tuple<std::string, std::string, double, int64_t, bool>;
std::vector<RelevanceTuple> relevance_tuples(const RetrievalDataset& dataset) {
    std::vector<RelevanceTuple> entries;
    for (const Relevance& r : dataset.relevance)
        entries.emplace_back(dataset.queries[static_cast<size_t>(r.query)].id,
                             dataset.passages[static_cast<size_t>(r.passage)].id, r.score, r.rank, r.hard_negative);
    return entries;
}

using TextTuple = std::tuple<std::string, std::string, std::string>;  // id, text, group
std::vector<TextTuple> query_tuples(const RetrievalDataset& dataset) {
    std::vector<TextTuple> out;
    for (const Query& q : dataset.queries) out.emplace_back(q.id, q.text, q.group);
    return out;
}
std::vector<TextTuple> passage_tuples(const RetrievalDataset& dataset) {
    std::vector<TextTuple> out;
    for (const Passage& p : dataset.passages) out.emplace_back(p.id, p.text, p.group);
    return out;
}

int64_t skipped_total(const PairsFile& file) {
    int64_t total = 0;
    for (const auto& [reason, count] : file.report.skipped) total += count;
    return total;
}

// Reads `contents` strictly (expecting an error mentioning the file and `fragment`) and
// leniently (expecting one skipped row and the good ones kept).
void check_bad_row(const std::string& contents, const std::string& extension, const std::string& fragment,
                   size_t good_rows) {
    TemporaryFile file(contents, extension);
    PairsFormat format = pairs_format(file.path(), "");
    CHECK_ERROR_MENTIONS(read_pairs_file(file.path(), format, Leniency::Strict), file.path());
    CHECK_ERROR_MENTIONS(read_pairs_file(file.path(), format, Leniency::Strict), fragment);
    PairsFile lenient = read_pairs_file(file.path(), format, Leniency::Lenient);
    CHECK(skipped_total(lenient) == 1);
    CHECK(lenient.rows.size() == good_rows);
    REQUIRE(lenient.report.skipped_examples.size() == 1);
    CHECK(lenient.report.skipped_examples[0].find(fragment) != std::string::npos);
}

// Reads `contents` both ways, expecting an error mentioning the file and `fragment` either way.
void check_bad_file(const std::string& contents, const std::string& extension, const std::string& fragment) {
    TemporaryFile file(contents, extension);
    PairsFormat format = pairs_format(file.path(), "");
    for (Leniency leniency : {Leniency::Strict, Leniency::Lenient}) {
        CHECK_ERROR_MENTIONS(read_pairs_file(file.path(), format, leniency), file.path());
        CHECK_ERROR_MENTIONS(read_pairs_file(file.path(), format, leniency), fragment);
    }
}

double seconds_to_read(const std::string& contents, const std::string& extension) {
    TemporaryFile file(contents, extension);
    auto start = std::chrono::steady_clock::now();
    try {
        read_pairs_file(file.path(), pairs_format(file.path(), ""), Leniency::Lenient);
    } catch (const Error&) {
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

TEST_CASE("pairs: JSON lines, CSV and TSV of the same content read to the same rows and data set") {
    // Two queries by query_id; a text with a comma, a quote, a tab-free newline; numbered
    // negatives with an empty one left out; scores.
    std::string jsonl =
        "{\"query_id\": \"q1\", \"anchor\": \"what is beer?\", \"positive\": \"a drink, \\\"brewed\\\"\\nfrom grain\", "
        "\"negative_1\": \"a bread\", \"negative_2\": \"\", \"score\": 0.5}\n"
        "{\"query_id\": \"q2\", \"anchor\": \"hops\", \"positive\": \"a flower\", \"negative_1\": \"a bread\", "
        "\"negative_2\": \"a stone\", \"score\": 2}\n"
        "{\"query_id\": \"q1\", \"anchor\": \"what is beer?\", \"positive\": \"ale\", \"negative_1\": \"a flower\", "
        "\"negative_2\": \"a bread\", \"score\": 0.75}\n";
    std::string csv =
        "query_id,anchor,positive,negative_1,negative_2,score\n"
        "q1,what is beer?,\"a drink, \"\"brewed\"\"\nfrom grain\",a bread,,0.5\n"
        "q2,hops,a flower,a bread,a stone,2\n"
        "q1,what is beer?,ale,a flower,a bread,0.75\n";
    std::string tsv =
        "query_id\tanchor\tpositive\tnegative_1\tnegative_2\tscore\n"
        "q1\twhat is beer?\t\"a drink, \"\"brewed\"\"\nfrom grain\"\ta bread\t\t0.5\n"
        "q2\thops\ta flower\ta bread\ta stone\t2\n"
        "q1\twhat is beer?\tale\ta flower\ta bread\t0.75\n";
    PairsFile from_jsonl = read_as(jsonl, ".jsonl");
    PairsFile from_csv = read_as(csv, ".csv");
    PairsFile from_tsv = read_as(tsv, ".tsv");
    CHECK(from_jsonl.format == PairsFormat::JsonLines);
    CHECK(from_csv.format == PairsFormat::Csv);
    CHECK(from_tsv.format == PairsFormat::Tsv);

    std::vector<RowTuple> expected = {
        {1, "q1", "what is beer?", "a drink, \"brewed\"\nfrom grain", {"a bread"}, 0.5},
        {2, "q2", "hops", "a flower", {"a bread", "a stone"}, 2.0},
        {3, "q1", "what is beer?", "ale", {"a flower", "a bread"}, 0.75},
    };
    CHECK(row_tuples(from_jsonl) == expected);
    // CSV and TSV: the quoted newline moves the later rows one line down.
    std::vector<RowTuple> expected_delimited = expected;
    std::get<0>(expected_delimited[0]) = 2;
    std::get<0>(expected_delimited[1]) = 4;
    std::get<0>(expected_delimited[2]) = 5;
    CHECK(row_tuples(from_csv) == expected_delimited);
    CHECK(row_tuples(from_tsv) == expected_delimited);
    std::vector<std::string> columns = {"query_id", "anchor", "positive", "negative_1", "negative_2", "score"};
    for (const PairsFile* file : {&from_jsonl, &from_csv, &from_tsv}) {
        CHECK(file->columns == columns);
        CHECK(file->negative_columns == 2);
        CHECK(file->has_score);
        CHECK(file->has_query_id);
        CHECK(file->report.records.at("rows") == 3);
        CHECK(file->report.records.at("queries") == 2);
        CHECK(file->report.skipped.empty());
        CHECK(file->report.seconds >= 0);
    }

    RetrievalDataset a = pairs_dataset(from_jsonl), b = pairs_dataset(from_csv), c = pairs_dataset(from_tsv);
    CHECK(query_tuples(a) == query_tuples(b));
    CHECK(query_tuples(a) == query_tuples(c));
    CHECK(passage_tuples(a) == passage_tuples(b));
    CHECK(passage_tuples(a) == passage_tuples(c));
    CHECK(relevance_tuples(a) == relevance_tuples(b));
    CHECK(relevance_tuples(a) == relevance_tuples(c));
    CHECK(a.passages.size() == 5);  // drink, bread, flower, stone, ale
}

TEST_CASE("pairs csv: RFC 4180 quoting, CRLF line ends, quotes inside unquoted fields") {
    std::string csv =
        "anchor,positive\r\n"
        "\"a, b\",\"say \"\"hi\"\"\"\r\n"           // embedded comma, doubled quote
        "\"two\r\nlines\",plain\r\n"                 // CRLF inside quotes is text
        "5\" screen,\"\"\"quoted\"\" start\"\r\n"    // a quote inside an unquoted field is text
        "\r\n"                                       // blank lines are skipped
        "last,\"no line end\"";
    PairsFile file = read_as(csv, ".csv");
    REQUIRE(file.rows.size() == 4);
    CHECK(file.rows[0].anchor == "a, b");
    CHECK(file.rows[0].positive == "say \"hi\"");
    CHECK(file.rows[0].line == 2);
    CHECK(file.rows[1].anchor == "two\r\nlines");
    CHECK(file.rows[1].positive == "plain");
    CHECK(file.rows[1].line == 3);
    CHECK(file.rows[2].anchor == "5\" screen");
    CHECK(file.rows[2].positive == "\"quoted\" start");
    CHECK(file.rows[2].line == 5);
    CHECK(file.rows[3].anchor == "last");
    CHECK(file.rows[3].positive == "no line end");
    CHECK(file.rows[3].line == 7);
    CHECK(file.has_score == false);
    CHECK(file.rows[0].score == 1.0);
    CHECK(file.rows[0].query_key == "a, b");

    // TSV: commas are text, tabs separate, quotes work the same.
    PairsFile tsv = read_as("anchor\tpositive\n\"a\tb\"\tc, d\n", ".tsv");
    REQUIRE(tsv.rows.size() == 1);
    CHECK(tsv.rows[0].anchor == "a\tb");
    CHECK(tsv.rows[0].positive == "c, d");

    // Text after a closing quote is a bad row; the read stays in step with the lines after it.
    check_bad_row("anchor,positive\n\"a\"b,c\nd,e\n", ".csv", "line 2: text follows a quoted field", 1);
    // An unterminated quote names the line where the field started, lenient or not.
    check_bad_file("anchor,positive\na,b\nc,\"d\ne,f\n", ".csv", "line 3: a quoted field starts here");
    check_bad_file("anchor\tpositive\na\t\"b\n", ".tsv", "line 2: a quoted field starts here");
}

TEST_CASE("pairs: a UTF-8 byte order mark is skipped; UTF-16 is refused") {
    const std::string bom = "\xEF\xBB\xBF";
    PairsFile csv = read_as(bom + "anchor,positive\na,b\n", ".csv");
    CHECK(csv.columns == std::vector<std::string>{"anchor", "positive"});
    CHECK(csv.rows.size() == 1);
    PairsFile tsv = read_as(bom + "anchor\tpositive\na\tb\n", ".tsv");
    CHECK(tsv.rows.size() == 1);
    PairsFile jsonl = read_as(bom + "{\"anchor\": \"a\", \"positive\": \"b\"}\n", ".jsonl");
    CHECK(jsonl.rows.size() == 1);
    check_bad_file(std::string("\xFF\xFE", 2) + "a\0n\0", ".csv", "UTF-16");
}

TEST_CASE("pairs: negative or negative_1 .. negative_K; empty and null cells are left out") {
    PairsFile plain = read_as("anchor,positive,negative\na,b,c\nd,e,\n", ".csv");
    CHECK(plain.negative_columns == 1);
    CHECK(plain.rows[0].negatives == std::vector<std::string>{"c"});
    CHECK(plain.rows[1].negatives.empty());

    // Numbered negatives in their numbers' order, whatever the header's order.
    PairsFile numbered = read_as("negative_2,anchor,negative_1,positive,negative_3\nn2,a,n1,p,\n", ".csv");
    CHECK(numbered.negative_columns == 3);
    CHECK(numbered.rows[0].negatives == std::vector<std::string>{"n1", "n2"});

    PairsFile json_null = read_as("{\"anchor\": \"a\", \"positive\": \"p\", \"negative_1\": null, \"negative_2\": \"x\"}\n",
                                  ".jsonl");
    CHECK(json_null.rows[0].negatives == std::vector<std::string>{"x"});

    check_bad_file("anchor,positive,negative,negative_1\na,b,c,d\n", ".csv", "both a 'negative' column and numbered");
    check_bad_file("anchor,positive,negative_1,negative_3\na,b,c,d\n", ".csv", "negative_2 is missing");
    check_bad_file("{\"anchor\": \"a\", \"positive\": \"b\", \"negative_2\": \"c\"}\n", ".jsonl",
                   "negative_1 is missing");
    check_bad_file("anchor,positive,negative_0\na,b,c\n", ".csv", "unknown column 'negative_0'");
    check_bad_file("anchor,positive,negative_01\na,b,c\n", ".csv", "unknown column 'negative_01'");
    // A negative that is not a string.
    check_bad_row("{\"anchor\": \"a\", \"positive\": \"b\", \"negative\": \"c\"}\n"
                  "{\"anchor\": \"a\", \"positive\": \"b\", \"negative\": 3}\n",
                  ".jsonl", "line 2: 'negative' is a number", 1);
}

TEST_CASE("pairs: the score column: numbers and numeric strings, finite, 1 without the column") {
    PairsFile csv = read_as("anchor,positive,score\na,b,0.25\nc,d, -3 \ne,f,+1e2\n", ".csv");
    REQUIRE(csv.rows.size() == 3);
    CHECK(csv.rows[0].score == 0.25);
    CHECK(csv.rows[1].score == -3.0);
    CHECK(csv.rows[2].score == 100.0);
    PairsFile jsonl = read_as("{\"anchor\": \"a\", \"positive\": \"b\", \"score\": 3}\n"
                              "{\"anchor\": \"a\", \"positive\": \"c\", \"score\": \"0.5\"}\n"
                              "{\"anchor\": \"a\", \"positive\": \"d\", \"score\": -0.125}\n",
                              ".jsonl");
    REQUIRE(jsonl.rows.size() == 3);
    CHECK(jsonl.rows[0].score == 3.0);
    CHECK(jsonl.rows[1].score == 0.5);
    CHECK(jsonl.rows[2].score == -0.125);
    CHECK(read_as("anchor,positive\na,b\n", ".csv").rows[0].score == 1.0);

    for (const char* bad : {"high", "", "nan", "inf", "1e999", "0x10", "1.5.2"})
        check_bad_row(fmt::format("anchor,positive,score\na,b,{}\nc,d,1\n", bad), ".csv",
                      "line 2: score", 1);
    check_bad_row("{\"anchor\": \"a\", \"positive\": \"b\", \"score\": true}\n"
                  "{\"anchor\": \"a\", \"positive\": \"c\", \"score\": 1}\n",
                  ".jsonl", "line 1: score a boolean is not a finite number", 1);
    check_bad_row("{\"anchor\": \"a\", \"positive\": \"b\", \"score\": null}\n"
                  "{\"anchor\": \"a\", \"positive\": \"c\", \"score\": 1}\n",
                  ".jsonl", "score null", 1);
    // A number beyond a double is not valid JSON for the parser; still one bad row.
    check_bad_row("{\"anchor\": \"a\", \"positive\": \"b\", \"score\": 1}\n"
                  "{\"anchor\": \"a\", \"positive\": \"c\", \"score\": 1e999}\n",
                  ".jsonl", "line 2: not valid JSON", 1);
}

TEST_CASE("pairs: query_id groups rows; an anchor that differs within one query_id is a bad row") {
    PairsFile file = read_as("query_id,anchor,positive\n7,what,p1\n8,other,p3\n7,what,p2\n", ".csv");
    CHECK(file.report.records.at("queries") == 2);
    RetrievalDataset dataset = pairs_dataset(file);
    REQUIRE(dataset.queries.size() == 2);
    CHECK(dataset.queries[0].id == "7");
    CHECK(dataset.queries[0].text == "what");
    CHECK(dataset.queries[0].group == "7");
    CHECK(relevance_tuples(dataset) == std::vector<RelevanceTuple>{{"7", "passage 1", 1.0, 0, false},
                                                                   {"7", "passage 3", 1.0, 1, false},
                                                                   {"8", "passage 2", 1.0, 0, false}});

    // JSON: a string or an integer, stored as text ("7" and 7 are the same query).
    PairsFile json = read_as("{\"query_id\": 7, \"anchor\": \"what\", \"positive\": \"p1\"}\n"
                             "{\"query_id\": \"7\", \"anchor\": \"what\", \"positive\": \"p2\"}\n",
                             ".jsonl");
    CHECK(json.rows[0].query_key == "7");
    CHECK(json.report.records.at("queries") == 1);

    // Without query_id, the anchor text is the query.
    PairsFile by_anchor = read_as("anchor,positive\nwhat,p1\nwho,p2\nwhat,p3\n", ".csv");
    CHECK(by_anchor.report.records.at("queries") == 2);
    CHECK(by_anchor.rows[2].query_key == "what");

    check_bad_row("query_id,anchor,positive\n7,what,p1\n7,why,p2\n8,x,y\n", ".csv",
                  "line 3: query_id '7' has the anchor 'why', but on line 2 it has 'what'", 2);
    check_bad_row("query_id,anchor,positive\n,what,p1\n8,x,y\n", ".csv", "line 2: query_id is empty", 1);
    check_bad_row("{\"query_id\": 1.5, \"anchor\": \"a\", \"positive\": \"b\"}\n"
                  "{\"query_id\": 2, \"anchor\": \"a\", \"positive\": \"b\"}\n",
                  ".jsonl", "line 1: query_id is a number", 1);
}

TEST_CASE("pairs_dataset: queries, deduplicated passages and relevance, exactly") {
    // Query "a" (no query_id: id "line 2", group "a"): positives p1 (0.5), p2 (2), p3 (0.5),
    // p1 again (kept once, first score); negatives n1, n1 again (once), p3 (also a positive:
    // kept as a positive only), shared (also a negative of query "b").
    std::string csv =
        "anchor,positive,negative_1,negative_2,score\n"
        "a,p1,n1,p3,0.5\n"
        "b,shared,n1,,1\n"
        "a,p2,n1,shared,2\n"
        "a,p3,,,0.5\n"
        "a,p1,,,9\n"
        "c,n1,p1,,1\n";
    PairsFile file = read_as(csv, ".csv");
    RetrievalDataset dataset = pairs_dataset(file);
    CHECK(dataset.name == file.path);
    CHECK(query_tuples(dataset) ==
          std::vector<TextTuple>{{"line 2", "a", "a"}, {"line 3", "b", "b"}, {"line 7", "c", "c"}});
    CHECK(passage_tuples(dataset) == std::vector<TextTuple>{{"passage 1", "p1", "query 1"},
                                                            {"passage 2", "n1", "query 1"},
                                                            {"passage 3", "p3", "query 1"},
                                                            {"passage 4", "shared", "query 2"},
                                                            {"passage 5", "p2", "query 1"}});
    CHECK(relevance_tuples(dataset) == std::vector<RelevanceTuple>{
                                           {"line 2", "passage 5", 2.0, 0, false},  // p2
                                           {"line 2", "passage 1", 0.5, 1, false},  // p1, before p3 (file order)
                                           {"line 2", "passage 3", 0.5, 2, false},  // p3
                                           {"line 2", "passage 2", 0.0, 3, true},   // n1
                                           {"line 2", "passage 4", 0.0, 4, true},   // shared
                                           {"line 3", "passage 4", 1.0, 0, false},
                                           {"line 3", "passage 2", 0.0, 1, true},
                                           {"line 7", "passage 2", 1.0, 0, false},  // n1 is c's positive
                                           {"line 7", "passage 1", 0.0, 1, true},
                                       });
    for (const Relevance& r : dataset.relevance) {
        CHECK(r.accepted == false);
        CHECK(r.answer_begin == -1);
        CHECK(r.answer_end == -1);
    }
    CHECK(dataset.report.records.at("rows") == 6);
}

TEST_CASE("pairs: every bad file is one line naming the file and the fix") {
    check_bad_file("positive,negative\na,b\n", ".csv", "no 'anchor' column");
    check_bad_file("anchor,negative\na,b\n", ".csv", "no 'positive' column");
    check_bad_file("{\"anchor\": \"a\"}\n", ".jsonl", "no 'positive' column");
    check_bad_file("anchor,positive,label\na,b,1\n", ".csv",
                   "unknown column 'label'; a pairs file's columns are anchor, positive, negative");
    check_bad_file("{\"anchor\": \"a\", \"positive\": \"b\", \"label\": 1}\n", ".jsonl", "unknown column 'label'");
    check_bad_file("anchor\tpositive\na\tb\n", ".csv", "give the format tsv");
    check_bad_file("anchor,positive,anchor\na,b,c\n", ".csv", "column 'anchor' appears twice");
    check_bad_file("{\"anchor\": \"a\", \"positive\": \"b\", \"anchor\": \"c\"}\n", ".jsonl",
                   "column 'anchor' appears twice");
    check_bad_file("anchor,,positive\na,b,c\n", ".csv", "column 2 of the header has no name");
    check_bad_file("anchor,positive\n", ".csv", "nothing but the header");
    check_bad_file("anchor,positive\n\n\r\n", ".csv", "nothing but the header");
    check_bad_file("\n\n", ".csv", "no header line");
    check_bad_file("\n \n", ".jsonl", "nothing but blank lines");
    check_bad_file("", ".jsonl", "empty");
    for (Leniency leniency : {Leniency::Strict, Leniency::Lenient})
        CHECK_ERROR_MENTIONS(read_pairs_file("/nonexistent/pairs.csv", PairsFormat::Csv, leniency), "no such file");

    // Lenient, with every row bad: no usable rows is still an error.
    TemporaryFile all_bad("anchor,positive\na\nb\n", ".csv");
    CHECK_ERROR_MENTIONS(read_pairs_file(all_bad.path(), PairsFormat::Csv, Leniency::Lenient), "no usable rows (2 skipped");
    TemporaryFile all_bad_json("[1]\n{\"anchor\": \"a\", \"positive\": 1e999}\n", ".jsonl");
    CHECK_ERROR_MENTIONS(read_pairs_file(all_bad_json.path(), PairsFormat::JsonLines, Leniency::Lenient),
                         "no usable rows (2 skipped as bad; the first: " + all_bad_json.path() + " line 1: the line is an array");
}

TEST_CASE("pairs: every bad row stops a strict read naming file and line, and is counted by a lenient one") {
    check_bad_row("anchor,positive\na,b,c\nd,e\n", ".csv", "line 2: 3 field(s) where the header has 2 columns", 1);
    check_bad_row("anchor\tpositive\na\nd\te\n", ".tsv", "holds a tab", 1);
    check_bad_row("anchor,positive\n,b\nd,e\n", ".csv", "line 2: the anchor is empty", 1);
    check_bad_row("anchor,positive\na,  \nd,e\n", ".csv", "line 2: the positive is empty", 1);
    check_bad_row("anchor,positive\na,b\xff\nd,e\n", ".csv", "line 2: invalid UTF-8 in 'positive'", 1);
    check_bad_row(std::string("anchor,positive\na,b\0c\nd,e\n", 26), ".csv", "line 2: a NUL byte in 'positive' at byte 1",
                  1);
    check_bad_row("{\"anchor\": \"a\", \"positive\": \"b\"}\n{\"anchor\": \"a\\u0000\", \"positive\": \"b\"}\n",
                  ".jsonl", "line 2: a NUL byte in 'anchor'", 1);
    check_bad_row("{\"anchor\": \"a\", \"positive\": \"b\"}\n{\"anchor\": \"\xc3(\", \"positive\": \"b\"}\n", ".jsonl",
                  "line 2: invalid UTF-8", 1);
    check_bad_row("{\"anchor\": \"a\", \"positive\": \"b\"}\n{\"anchor\": \"a\", \"positive\": }\n", ".jsonl",
                  "line 2: not valid JSON", 1);
    check_bad_row("{\"anchor\": \"a\", \"positive\": \"b\"}\n[1, 2]\n", ".jsonl", "line 2: the line is an array", 1);
    check_bad_row("{\"anchor\": \"a\", \"positive\": \"b\"}\n" + std::string(100, '[') + "\n", ".jsonl",
                  "line 2: JSON nesting exceeds 64 levels", 1);
    check_bad_row("{\"anchor\": \"a\", \"positive\": \"b\"}\n{\"anchor\": \"a\", \"positive\": \"b\", \"score\": 1}\n",
                  ".jsonl", "line 2: key 'score' is not among the first row's columns", 1);
    check_bad_row("{\"anchor\": \"a\", \"positive\": \"b\", \"score\": 1}\n{\"anchor\": \"a\", \"positive\": \"b\"}\n",
                  ".jsonl", "line 2: no key 'score', which the first row has", 1);
    check_bad_row("{\"anchor\": \"a\", \"positive\": \"b\"}\n{\"anchor\": \"a\", \"positive\": \"b\", \"anchor\": \"c\"}\n",
                  ".jsonl", "line 2: key 'anchor' appears twice", 1);
    check_bad_row("{\"anchor\": \"a\", \"positive\": \"b\"}\n{\"anchor\": [\"a\"], \"positive\": \"b\"}\n", ".jsonl",
                  "line 2: 'anchor' is an array; text columns hold strings", 1);
    check_bad_row("{\"anchor\": \"a\", \"positive\": \"b\"}\n{\"anchor\": null, \"positive\": \"b\"}\n", ".jsonl",
                  "'anchor' is null", 1);

    // A bad first JSON line does not name the columns: the next object does.
    TemporaryFile first_bad("{\"anchor\": \"a\", \"score\": oops}\n\n{\"anchor\": \"a\", \"positive\": \"b\"}\n",
                            ".jsonl");
    PairsFile lenient = read_pairs_file(first_bad.path(), PairsFormat::JsonLines, Leniency::Lenient);
    CHECK(lenient.columns == std::vector<std::string>{"anchor", "positive"});
    CHECK(lenient.rows.size() == 1);
    CHECK(lenient.rows[0].line == 3);
    CHECK(lenient.report.skipped.at("invalid JSON") == 1);
    CHECK_ERROR_MENTIONS(read_pairs_file(first_bad.path(), PairsFormat::JsonLines, Leniency::Strict),
                         "line 1: not valid JSON");

    // Lenient counts by reason and keeps the first few messages.
    std::string many = "anchor,positive\n";
    for (int i = 0; i < 30; ++i) many += "only-one-field\n";
    many += "a,b\n";
    PairsFile counted = read_as(many, ".csv", Leniency::Lenient);
    CHECK(counted.report.skipped.at("wrong number of fields") == 30);
    CHECK(counted.report.skipped_examples.size() == 10);
    CHECK(counted.rows.size() == 1);
    CHECK(counted.report.records.at("rows") == 1);
}

TEST_CASE("pairs_format: by extension, or given; an unknown one is an error naming the file") {
    CHECK(pairs_format("x/train.jsonl", "") == PairsFormat::JsonLines);
    CHECK(pairs_format("train.ndjson", "") == PairsFormat::JsonLines);
    CHECK(pairs_format("train.csv", "") == PairsFormat::Csv);
    CHECK(pairs_format("TRAIN.CSV", "") == PairsFormat::Csv);
    CHECK(pairs_format("train.tsv", "") == PairsFormat::Tsv);
    CHECK(pairs_format("train.txt", "csv") == PairsFormat::Csv);
    CHECK(pairs_format("train.csv", "tsv") == PairsFormat::Tsv);
    CHECK(pairs_format("train", "jsonl") == PairsFormat::JsonLines);
    CHECK(std::string(pairs_format_name(PairsFormat::JsonLines)) == "jsonl");
    CHECK(std::string(pairs_format_name(PairsFormat::Csv)) == "csv");
    CHECK(std::string(pairs_format_name(PairsFormat::Tsv)) == "tsv");
    CHECK_ERROR_MENTIONS(pairs_format("data/train.json", ""), "data/train.json: cannot tell the format");
    CHECK_ERROR_MENTIONS(pairs_format("data/train", ""), "give the format (jsonl, csv or tsv)");
    CHECK_ERROR_MENTIONS(pairs_format("train.csv", "parquet"), "train.csv: unknown format 'parquet'");

    // Given, the format wins over the extension.
    TemporaryFile tab_separated("anchor\tpositive\na\tb\n", ".txt");
    PairsFile file = read_pairs_file(tab_separated.path(), pairs_format(tab_separated.path(), "tsv"), Leniency::Strict);
    CHECK(file.rows.size() == 1);
    CHECK(file.format == PairsFormat::Tsv);
}

TEST_CASE("read_corpus_texts: .txt lines, or the text column of JSON lines, CSV and TSV") {
    TemporaryFile txt("\xEF\xBB\xBF" "first text\r\n\n  \nsecond, with a comma\nthird", ".txt");
    CHECK(read_corpus_texts(txt.path(), "") ==
          std::vector<std::string>{"first text", "second, with a comma", "third"});
    TemporaryFile jsonl("{\"id\": 1, \"text\": \"one\"}\n\n{\"text\": \"two\\nlines\", \"title\": {\"x\": 1}}\n", ".jsonl");
    CHECK(read_corpus_texts(jsonl.path(), "") == std::vector<std::string>{"one", "two\nlines"});
    TemporaryFile csv("id,text\n1,\"a, b\"\n2,\n3,c\n", ".csv");
    CHECK(read_corpus_texts(csv.path(), "") == std::vector<std::string>{"a, b", "c"});
    TemporaryFile tsv("text\tid\nx y\t1\n", ".tsv");
    CHECK(read_corpus_texts(tsv.path(), "") == std::vector<std::string>{"x y"});
    TemporaryFile given("one\ntwo\n", ".corpus");
    CHECK(read_corpus_texts(given.path(), "txt") == std::vector<std::string>{"one", "two"});

    TemporaryFile bad_utf8("fine\nbad \xff\n", ".txt");
    CHECK_ERROR_MENTIONS(read_corpus_texts(bad_utf8.path(), ""), bad_utf8.path() + " line 2: invalid UTF-8");
    TemporaryFile blank("\n \n", ".txt");
    CHECK_ERROR_MENTIONS(read_corpus_texts(blank.path(), ""), "no text at all");
    TemporaryFile no_column("id,body\n1,x\n", ".csv");
    CHECK_ERROR_MENTIONS(read_corpus_texts(no_column.path(), ""), "no 'text' column");
    TemporaryFile no_key("{\"text\": \"a\"}\n{\"body\": \"b\"}\n", ".jsonl");
    CHECK_ERROR_MENTIONS(read_corpus_texts(no_key.path(), ""), no_key.path() + " line 2: \"text\" is missing");
    TemporaryFile not_json("{\"text\": \"a\"\n", ".jsonl");
    CHECK_ERROR_MENTIONS(read_corpus_texts(not_json.path(), ""), "line 1: not valid JSON");
    TemporaryFile short_row("id,text\n1\n", ".csv");
    CHECK_ERROR_MENTIONS(read_corpus_texts(short_row.path(), ""), "line 2: 1 field(s)");
    CHECK_ERROR_MENTIONS(read_corpus_texts("corpus.parquet", ""), "corpus.parquet: cannot tell the corpus format");
}

TEST_CASE("pairs: 2 MB of quotes, one 2 MB line and 2 MB of delimiters are read in one pass") {
    constexpr size_t kBytes = 2 << 20;
    // A quoted field of doubled quotes (1 MB of '"' in the text), closed.
    CHECK(seconds_to_read("anchor,positive\na,\"" + std::string(kBytes, '"') + "\"\n", ".csv") < 2.0);
    // The same, never closed: an error, found in one pass.
    CHECK(seconds_to_read("anchor,positive\na,\"" + std::string(kBytes + 1, '"') + "\n", ".csv") < 2.0);
    // Nothing but quotes.
    CHECK(seconds_to_read(std::string(kBytes, '"'), ".tsv") < 2.0);
    // One JSON line holding a 2 MB string, and one of 2 MB of escapes.
    CHECK(seconds_to_read("{\"anchor\": \"a\", \"positive\": \"" + std::string(kBytes, 'x') + "\"}\n", ".jsonl") < 2.0);
    std::string escapes;
    for (size_t i = 0; i < kBytes / 2; ++i) escapes += "\\\"";
    CHECK(seconds_to_read("{\"anchor\": \"a\", \"positive\": \"" + escapes + "\"}\n", ".jsonl") < 2.0);
    // A row of 2 MB of commas, and a header of them.
    CHECK(seconds_to_read("anchor,positive\n" + std::string(kBytes, ',') + "\n", ".csv") < 2.0);
    CHECK(seconds_to_read(std::string(kBytes, ',') + "\na,b\n", ".csv") < 2.0);
    // 2 MB of newlines inside one quoted field, and a JSON line of 2 MB of keys.
    CHECK(seconds_to_read("anchor,positive\na,\"" + std::string(kBytes, '\n') + "\"\n", ".csv") < 2.0);
    std::string keys = "{\"anchor\": \"a\", \"positive\": \"b\"}\n{";
    while (keys.size() < kBytes) keys += fmt::format("\"k{}\": 1, ", keys.size());
    keys += "\"z\": 1}\n";
    CHECK(seconds_to_read(keys, ".jsonl") < 2.0);

    // The long field is read whole.
    PairsFile file = read_as("anchor,positive\na,\"" + std::string(kBytes, '"') + "\"\n", ".csv");
    REQUIRE(file.rows.size() == 1);
    CHECK(file.rows[0].positive == std::string(kBytes / 2, '"'));
}
