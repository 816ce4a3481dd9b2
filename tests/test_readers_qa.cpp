// The question-answer readers (KorQuAD, StackExchange Posts.xml, ranked-QA JSON), the text
// cleaning under them, and the split by group. Fixtures are written by the tests into
// temporary files; the real files under ../shared/data are read when they are there.
//
// The tests "... in one pass" read hostile input sized so that a reader going back over its
// input for every answer, entity or tag would run for many minutes, until the suite's timeout
// stops it, while a linear one takes a fraction of a second. Nothing is timed; the times in
// their comments were taken on the release build.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <unordered_set>
#include <vector>

#include "data/korquad_reader.h"
#include "data/ranked_qa_reader.h"
#include "data/split.h"
#include "data/stackexchange_reader.h"
#include "data/text_cleaning.h"
#include "tests/test_helpers.h"

namespace {

namespace fs = std::filesystem;
using namespace nce;
using namespace nce::data;
using nce::testing::TemporaryFile;

// ---- Naive references, written with plain loops -------------------------------------------

// UTF-8 encoding of one code point, straight from the table in RFC 3629.
std::string naive_utf8(uint32_t code_point) {
    std::string out;
    if (code_point < 0x80) {
        out += static_cast<char>(code_point);
    } else if (code_point < 0x800) {
        out += static_cast<char>(0xC0 + code_point / 64);
        out += static_cast<char>(0x80 + code_point % 64);
    } else if (code_point < 0x10000) {
        out += static_cast<char>(0xE0 + code_point / 4096);
        out += static_cast<char>(0x80 + code_point / 64 % 64);
        out += static_cast<char>(0x80 + code_point % 64);
    } else {
        out += static_cast<char>(0xF0 + code_point / 262144);
        out += static_cast<char>(0x80 + code_point / 4096 % 64);
        out += static_cast<char>(0x80 + code_point / 64 % 64);
        out += static_cast<char>(0x80 + code_point % 64);
    }
    return out;
}

// The rank of answer `a` among `answers` of one question: how many others come before it
// (higher score; equal score and accepted while `a` is not; equal score and acceptance and a
// lower id).
struct NaiveAnswer {
    int64_t id;
    int64_t score;
    bool accepted;
};
int64_t naive_rank(const NaiveAnswer& a, const std::vector<NaiveAnswer>& answers) {
    int64_t before = 0;
    for (const NaiveAnswer& other : answers) {
        if (other.id == a.id) continue;
        bool other_first = other.score > a.score || (other.score == a.score && other.accepted && !a.accepted) ||
                           (other.score == a.score && other.accepted == a.accepted && other.id < a.id);
        if (other_first) ++before;
    }
    return before;
}

// query id -> (passage id, rank, score, accepted) of each relevant passage, sorted by rank.
using RelevanceTable = std::map<std::string, std::vector<std::tuple<std::string, int64_t, double, bool>>>;
RelevanceTable relevance_table(const RetrievalDataset& dataset) {
    RelevanceTable table;
    for (const Relevance& r : dataset.relevance)
        table[dataset.queries[r.query].id].emplace_back(dataset.passages[r.passage].id, r.rank, r.score, r.accepted);
    for (auto& [query, rows] : table)
        std::sort(rows.begin(), rows.end(),
                  [](const auto& a, const auto& b) { return std::get<1>(a) < std::get<1>(b); });
    return table;
}

// The project's source root (tests/meson.build passes it), or the working folder's guess.
fs::path shared_data_folder() {
    std::vector<fs::path> roots;
    if (const char* root = std::getenv("NCE_SOURCE_ROOT")) roots.emplace_back(root);
    roots.emplace_back(".");
    roots.emplace_back("..");
    for (const fs::path& root : roots)
        if (fs::is_directory(root / ".." / "shared" / "data")) return root / ".." / "shared" / "data";
    return {};
}

}  // namespace

// ============================================================================================
// Text cleaning
// ============================================================================================

TEST_CASE("utf8: the validator agrees with the definition on every 1-, 2- and 3-byte string") {
    // Valid strings of one to three bytes are exactly: ASCII sequences, and encodings of code
    // points that need that many bytes and are not surrogates. Build that set from the naive
    // encoder and compare with find_invalid_utf8 on every such string.
    std::set<std::string> valid;
    for (uint32_t cp = 0; cp < 0x10000; ++cp)
        if (cp < 0xD800 || cp > 0xDFFF) valid.insert(naive_utf8(cp));
    auto is_valid_naive = [&](const std::string& s) {
        // a concatenation of valid code points: try every way to cut it (at most 3 bytes)
        if (s.empty()) return true;
        for (size_t cut = 1; cut <= s.size(); ++cut) {
            if (!valid.count(s.substr(0, cut))) continue;
            std::string rest = s.substr(cut);
            bool rest_valid = rest.empty() || valid.count(rest) ||
                              (rest.size() == 2 && valid.count(rest.substr(0, 1)) && valid.count(rest.substr(1)));
            if (rest_valid) return true;
        }
        return false;
    };
    int64_t mismatches = 0;
    for (int b0 = 0; b0 < 256; ++b0) {
        std::string one(1, static_cast<char>(b0));
        mismatches += is_valid_naive(one) != is_valid_utf8(one);
        for (int b1 = 0; b1 < 256; ++b1) {
            std::string two = one + static_cast<char>(b1);
            mismatches += is_valid_naive(two) != is_valid_utf8(two);
        }
    }
    for (int b0 = 0xE0; b0 <= 0xEF; ++b0)  // every three-byte string with a three-byte lead
        for (int b1 = 0; b1 < 256; ++b1)
            for (int b2 = 0x70; b2 < 0xC8; ++b2) {  // around the continuation range 80..BF
                std::string three{static_cast<char>(b0), static_cast<char>(b1), static_cast<char>(b2)};
                mismatches += is_valid_naive(three) != is_valid_utf8(three);
            }
    CHECK(mismatches == 0);

    // Four bytes: every supplementary code point is valid, the ones just past U+10FFFF not.
    for (uint32_t cp = 0x10000; cp <= 0x10FFFF; cp += 0x3FF) CHECK(is_valid_utf8(naive_utf8(cp)));
    CHECK(is_valid_utf8(naive_utf8(0x10FFFF)));
    CHECK_FALSE(is_valid_utf8("\xF4\x90\x80\x80"));  // U+110000
    CHECK_FALSE(is_valid_utf8("\xF0\x8F\xBF\xBF"));  // overlong U+FFFF
}

TEST_CASE("utf8: the first invalid byte is found, encoding matches the naive encoder, offsets count code points") {
    CHECK(find_invalid_utf8("ab\xFF" "cd") == 2);
    CHECK(find_invalid_utf8("\xEA\xB0\x80\xEA\xB0") == 3);  // "가" then a cut-short "가"
    CHECK(find_invalid_utf8("\xC0\xAF") == 0);               // overlong '/'
    CHECK(find_invalid_utf8("\xED\xA0\x80") == 0);           // surrogate U+D800
    CHECK(find_invalid_utf8("x\x80") == 1);                  // stray continuation byte
    CHECK(find_invalid_utf8("한국어 text") == std::string::npos);

    for (uint32_t cp : {0x24u, 0xA2u, 0x939u, 0x20ACu, 0xD55Cu, 0x10348u, 0x10FFFFu}) {
        std::string encoded;
        append_utf8(encoded, cp);
        CHECK(encoded == naive_utf8(cp));
    }
    std::string replaced;
    append_utf8(replaced, 0xD800);
    CHECK(replaced == "\xEF\xBF\xBD");

    // "가나a😀b": code points start at bytes 0, 3, 6, 7, 11; the end is 12.
    std::string text = "가나a\xF0\x9F\x98\x80" "b";
    std::vector<size_t> starts;
    for (size_t i = 0; i < text.size(); ++i)
        if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) starts.push_back(i);
    starts.push_back(text.size());
    for (size_t k = 0; k < starts.size(); ++k)
        CHECK(byte_offset_of_code_point(text, static_cast<int64_t>(k)) == starts[k]);
    CHECK(byte_offset_of_code_point(text, 6) == std::string::npos);
    CHECK(byte_offset_of_code_point(text, -1) == std::string::npos);

    CHECK(truncate_utf8("가나다라", 2) == "가나...");
    CHECK(truncate_utf8("가나", 2) == "가나");
}

TEST_CASE("entities: named, decimal and hex references decode to UTF-8; the rest stays as written") {
    CHECK(decode_html_entities("&amp;&lt;&gt;&quot;&apos;") == "&<>\"'");
    CHECK(decode_html_entities("caf&eacute; caf&#233; caf&#xE9; caf&#XE9;") == "café café café café");
    CHECK(decode_html_entities("a&nbsp;b") == "a\xC2\xA0" "b");
    CHECK(decode_html_entities("&mdash;&hellip;&euro;&copy;&Eacute;") == "—…€©É");
    CHECK(decode_html_entities("&#x1F37A;&#127866;") == "\xF0\x9F\x8D\xBA\xF0\x9F\x8D\xBA");  // 🍺 twice
    CHECK(decode_html_entities("&#0;&#xD800;&#x110000;&#99999999999999999999;") ==
          "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
    // Unknown names, missing ';', bare '&', malformed numbers: kept.
    CHECK(decode_html_entities("AT&T &unknown; &amp &#; &#x; &#12a; a & b &") ==
          "AT&T &unknown; &amp &#; &#x; &#12a; a & b &");
    // One pass: an escaped entity decodes once.
    CHECK(decode_html_entities("&amp;lt;") == "&lt;");
    // XML knows only its five names: &nbsp; is not one of them.
    CHECK(decode_xml_entities("&lt;p&gt;&amp;nbsp;&nbsp;&#xA;") == "<p>&nbsp;&nbsp;\n");
}

TEST_CASE("html: tags are stripped, block tags leave a space, whitespace collapses") {
    CHECK(strip_html_tags("<b>bold</b>ly") == "boldly");
    CHECK(collapse_whitespace(strip_html_tags("<p>one</p><p>two</p>")) == "one two");
    CHECK(strip_html_tags("<a href=\"x>y\" title='a>b'>link</a>") == "link");
    CHECK(strip_html_tags("x<!-- a <b> comment -->y") == "xy");
    CHECK(strip_html_tags("a < b and c<3 and d <") == "a < b and c<3 and d <");
    CHECK(strip_html_tags("end <p unclosed") == "end <p unclosed");
    // A quote hides '>' up to the same quote: unmatched, the tag never closes and stays text.
    CHECK(strip_html_tags("<a \"> <b>x") == "<a \"> x");
    CHECK(strip_html_tags("<a '\"'>x<b t=\"'\">y") == "xy");
    CHECK(collapse_whitespace("  a \t\n b\xC2\xA0\xC2\xA0" "c\r\n ") == "a b c");
    CHECK(collapse_whitespace("한국어\n\n맥주") == "한국어 맥주");
    // A StackExchange body after XML unescaping: an author's "&lt;b&gt;" stays text "<b>".
    CHECK(clean_html("<p>I like &lt;b&gt; tags &amp; IPA&nbsp;beer</p>\n<pre><code>x &lt; 1\n</code></pre>") ==
          "I like <b> tags & IPA beer x < 1");
}

// ============================================================================================
// KorQuAD
// ============================================================================================

namespace {

// Two articles. The context of article "서울" is "가나다 서울은 1394년에 수도가 되었다." written
// with \u escapes: "1394년" starts at code point 8 but at byte 20; "서울" at code point 4, byte 10.
// Paragraph 1 of "서울" repeats paragraph 0's context. Questions are raw UTF-8.
const char* kKorquadFixture = R"({"version": "test", "data": [
 {"title": "\uc11c\uc6b8", "paragraphs": [
  {"context": "\uac00\ub098\ub2e4 \uc11c\uc6b8\uc740 1394\ub144\uc5d0 \uc218\ub3c4\uac00 \ub418\uc5c8\ub2e4.",
   "qas": [{"id": "seoul-0-0", "question": "서울은 언제 수도가 되었나?", "answers": [{"text": "1394\ub144", "answer_start": 8}]},
           {"id": "seoul-0-1", "question": "무엇이 수도가 되었나?", "answers": [{"text": "\uc11c\uc6b8", "answer_start": 4}]}]},
  {"context": "\uac00\ub098\ub2e4 \uc11c\uc6b8\uc740 1394\ub144\uc5d0 \uc218\ub3c4\uac00 \ub418\uc5c8\ub2e4.",
   "qas": [{"id": "seoul-1-0", "question": "다시 묻는다: 언제?", "answers": [{"text": "1394", "answer_start": 8}]}]}]},
 {"title": "Beer", "paragraphs": [
  {"context": "Beer is brewed from malt.",
   "qas": [{"id": "beer-0-0", "question": "What is beer brewed from?", "answers": [{"text": "malt", "answer_start": 20}]}]}]}
]})";

std::string replaced(std::string text, const std::string& from, const std::string& to) {
    size_t at = text.find(from);
    REQUIRE(at != std::string::npos);
    return text.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("korquad: questions, deduplicated paragraphs, groups and code-point answer offsets") {
    TemporaryFile file(kKorquadFixture, ".json");
    RetrievalDataset dataset = read_korquad(file.path(), Leniency::Strict);

    CHECK(dataset.report.records.at("articles") == 2);
    CHECK(dataset.report.records.at("paragraphs") == 3);
    CHECK(dataset.report.records.at("questions") == 4);
    CHECK(dataset.report.records.at("passages") == 2);
    CHECK(dataset.report.skipped.empty());

    REQUIRE(dataset.queries.size() == 4);
    CHECK(dataset.queries[0].id == "seoul-0-0");
    CHECK(dataset.queries[0].text == "서울은 언제 수도가 되었나?");
    CHECK(dataset.queries[0].group == "서울");
    CHECK(dataset.queries[3].group == "Beer");

    REQUIRE(dataset.passages.size() == 2);
    CHECK(dataset.passages[0].id == "서울#0");
    CHECK(dataset.passages[0].text == "가나다 서울은 1394년에 수도가 되었다.");
    CHECK(dataset.passages[1].text == "Beer is brewed from malt.");

    RelevanceTable table = relevance_table(dataset);
    using Row = std::tuple<std::string, int64_t, double, bool>;
    CHECK(table["seoul-0-0"] == std::vector<Row>{{"서울#0", 0, 1.0, false}});
    CHECK(table["seoul-1-0"] == std::vector<Row>{{"서울#0", 0, 1.0, false}});  // the repeated context
    CHECK(table["beer-0-0"] == std::vector<Row>{{"Beer#0", 0, 1.0, false}});
}

TEST_CASE("korquad: an answer_start counted in bytes is skipped (lenient) or an error naming the qa (strict)") {
    // "1394년" is at code point 8 = byte 20; a writer that counted bytes would say 20.
    TemporaryFile file(replaced(kKorquadFixture, "\"answer_start\": 8}]},", "\"answer_start\": 20}]},"), ".json");
    RetrievalDataset dataset = read_korquad(file.path(), Leniency::Lenient);
    CHECK(dataset.report.records.at("questions") == 3);
    CHECK(dataset.report.skipped.at("answer not at answer_start") == 1);
    REQUIRE(dataset.report.skipped_examples.size() == 1);
    CHECK(dataset.report.skipped_examples[0].find("seoul-0-0") != std::string::npos);
    CHECK_ERROR_MENTIONS(read_korquad(file.path(), Leniency::Strict), "qa seoul-0-0");
    CHECK_ERROR_MENTIONS(read_korquad(file.path(), Leniency::Strict), file.path());

    TemporaryFile past_end(replaced(kKorquadFixture, "\"answer_start\": 20}", "\"answer_start\": 2000}"), ".json");
    CHECK_ERROR_MENTIONS(read_korquad(past_end.path(), Leniency::Strict), "shorter");
    // Above int64's range: reported as written, past the paragraph (it once wrapped to -2^63).
    TemporaryFile huge(replaced(kKorquadFixture, "\"answer_start\": 20}", "\"answer_start\": 9223372036854775808}"),
                       ".json");
    CHECK_ERROR_MENTIONS(read_korquad(huge.path(), Leniency::Strict), "answer_start 9223372036854775808");
    CHECK_ERROR_MENTIONS(read_korquad(huge.path(), Leniency::Strict), "shorter");
}

TEST_CASE("korquad: a question id given twice is skipped (lenient) or an error naming it (strict)") {
    TemporaryFile file(replaced(kKorquadFixture, "\"id\": \"seoul-1-0\"", "\"id\": \"seoul-0-0\""), ".json");
    RetrievalDataset dataset = read_korquad(file.path(), Leniency::Lenient);
    CHECK(dataset.report.records.at("questions") == 3);
    CHECK(dataset.report.skipped.at("duplicate question id") == 1);
    CHECK_ERROR_MENTIONS(read_korquad(file.path(), Leniency::Strict), "the id \"seoul-0-0\" names an earlier question");
}

TEST_CASE("korquad: 100,000 answers on a 10 MB paragraph are checked in one pass") {
    // answer_start counts code points. Converting it to a byte offset by counting from the
    // paragraph's start scanned the paragraph once per answer: 20,000 answers on 200 kB took
    // 2.5 s; with that conversion put back this test took 16 minutes. Now 0.4 s (the code
    // points are counted once per paragraph).
    const char* pieces[] = {"a", "é", "가", "\xF0\x9F\x8D\xBA"};  // 1, 2, 3 and 4 bytes (the last is 🍺)
    const int64_t code_points = 4'000'000, answers = 100'000;
    std::string json = "{\"data\": [{\"title\": \"t\", \"paragraphs\": [{\"context\": \"";
    for (int64_t i = 0; i < code_points; ++i) json += pieces[i % 4];
    json += "\", \"qas\": [{\"id\": \"many\", \"question\": \"q\", \"answers\": [";
    for (int64_t k = 0; k < answers; ++k) {  // two code points each, from near the end
        int64_t start = code_points - 2 - k % 4000;
        json += fmt::format("{}{{\"text\": \"{}{}\", \"answer_start\": {}}}", k ? ", " : "", pieces[start % 4],
                            pieces[(start + 1) % 4], start);
    }
    // A second question whose answer starts one code point past the end.
    json += fmt::format("]}}, {{\"id\": \"past-end\", \"question\": \"q\", \"answers\": [{{\"text\": \"a\", "
                        "\"answer_start\": {}}}]}}]}}]}}]}}",
                        code_points + 1);
    TemporaryFile file(json, ".json");
    RetrievalDataset dataset = read_korquad(file.path(), Leniency::Lenient);
    CHECK(dataset.report.records.at("questions") == 1);
    CHECK(dataset.report.skipped.at("answer not at answer_start") == 1);
    REQUIRE(dataset.report.skipped_examples.size() == 1);
    CHECK(dataset.report.skipped_examples[0].find("qa past-end") != std::string::npos);
    CHECK(dataset.report.skipped_examples[0].find("shorter") != std::string::npos);
}

TEST_CASE("korquad: a title longer than 1,024 bytes skips its article: it would be copied into every record") {
    // 1,000 paragraphs under a 1 MB title: a 1 MB file that read whole would be a 2 GB data set.
    const size_t paragraphs = 1000;
    auto file_with_title = [&](const std::string& title) {
        std::string json = "{\"data\": [{\"title\": \"" + title + "\", \"paragraphs\": [";
        for (size_t p = 0; p < paragraphs; ++p)
            json += fmt::format("{}{{\"context\": \"c{}\", \"qas\": []}}", p ? ", " : "", p);
        return json + "]}, {\"title\": \"short\", \"paragraphs\": [{\"context\": \"c\", \"qas\": []}]}]}";
    };
    TemporaryFile file(file_with_title(std::string(1'000'000, 't')), ".json");
    RetrievalDataset dataset = read_korquad(file.path(), Leniency::Lenient);
    CHECK(dataset.report.records.at("articles") == 1);
    CHECK(dataset.passages.size() == 1);
    CHECK(dataset.report.skipped.at("article with a title too long") == 1);
    CHECK_ERROR_MENTIONS(read_korquad(file.path(), Leniency::Strict),
                         file.path() + ": article 0 has a title of 1000000 bytes, more than the 1024");

    TemporaryFile longest(file_with_title(std::string(1024, 't')), ".json");
    CHECK(read_korquad(longest.path(), Leniency::Strict).passages.size() == paragraphs + 1);
}

TEST_CASE("korquad: missing fields are skipped with a reason (lenient) or stop the read naming the record (strict)") {
    TemporaryFile no_question(replaced(kKorquadFixture, "\"question\": \"What is beer brewed from?\", ", ""), ".json");
    RetrievalDataset dataset = read_korquad(no_question.path(), Leniency::Lenient);
    CHECK(dataset.report.records.at("questions") == 3);
    CHECK(dataset.report.skipped.at("question without id, question or answers") == 1);
    CHECK_ERROR_MENTIONS(read_korquad(no_question.path(), Leniency::Strict), "qa beer-0-0");

    TemporaryFile no_title(replaced(kKorquadFixture, "\"title\": \"Beer\", ", ""), ".json");
    dataset = read_korquad(no_title.path(), Leniency::Lenient);
    CHECK(dataset.report.records.at("articles") == 1);
    CHECK(dataset.report.skipped.at("article without title or paragraphs") == 1);
    CHECK_ERROR_MENTIONS(read_korquad(no_title.path(), Leniency::Strict), "article 1");

    TemporaryFile answer_start_text(replaced(kKorquadFixture, "\"answer_start\": 20}", "\"answer_start\": \"20\"}"),
                                    ".json");
    CHECK_ERROR_MENTIONS(read_korquad(answer_start_text.path(), Leniency::Strict), "answer_start");

    TemporaryFile not_squad("[1, 2, 3]", ".json");
    CHECK_ERROR_MENTIONS(read_korquad(not_squad.path(), Leniency::Lenient), "\"data\" array");
}

TEST_CASE("korquad: empty, missing, truncated, non-JSON and non-UTF-8 files are one-line errors naming the file") {
    TemporaryFile empty("", ".json");
    CHECK_ERROR_MENTIONS(read_korquad(empty.path(), Leniency::Lenient), "empty");
    CHECK_ERROR_MENTIONS(read_korquad("/nonexistent/KorQuAD.json", Leniency::Lenient), "no such file");
    CHECK_ERROR_MENTIONS(read_korquad(fs::temp_directory_path().string(), Leniency::Lenient), "is a folder");

    std::string text = kKorquadFixture;
    TemporaryFile truncated(text.substr(0, text.size() / 2), ".json");
    CHECK_ERROR_MENTIONS(read_korquad(truncated.path(), Leniency::Lenient), "truncated");
    CHECK_ERROR_MENTIONS(read_korquad(truncated.path(), Leniency::Lenient), truncated.path());

    TemporaryFile bad_utf8(replaced(kKorquadFixture, "Beer is", "Beer\xFF is"), ".json");
    size_t bad_byte = std::string(kKorquadFixture).find("Beer is") + 4;
    CHECK_ERROR_MENTIONS(read_korquad(bad_utf8.path(), Leniency::Lenient),
                         "invalid UTF-8 at byte " + std::to_string(bad_byte));

    TemporaryFile not_json("<html>not json</html>", ".json");
    CHECK_ERROR_MENTIONS(read_korquad(not_json.path(), Leniency::Lenient), "not valid JSON");

    // A number beyond a double's range is a parse failure of its own in nlohmann::json (an
    // out_of_range, not a parse_error); it is the same one line, its digits cut short.
    TemporaryFile huge_number("{\"version\": 1e999, \"data\": []}", ".json");
    CHECK_ERROR_MENTIONS(read_korquad(huge_number.path(), Leniency::Lenient),
                         huge_number.path() + ": not valid JSON: number overflow parsing '1e999'");
    TemporaryFile long_number("{\"data\": [], \"version\": 1" + std::string(100'000, '0') + "}", ".json");
    try {
        read_korquad(long_number.path(), Leniency::Lenient);
        FAIL("a number of 100,001 digits was read");
    } catch (const nce::Error& error) {
        CHECK(std::string(error.what()).find("number overflow parsing '10000") != std::string::npos);
        CHECK(std::string(error.what()).size() < 300 + long_number.path().size());
    }

    // Every prefix of the file is a clean nce::Error (or, the whole file, a data set): never a crash.
    int64_t errors = 0;
    for (size_t length = 1; length < text.size(); ++length) {
        TemporaryFile prefix(text.substr(0, length), ".json");
        try {
            read_korquad(prefix.path(), Leniency::Lenient);
        } catch (const nce::Error& error) {
            ++errors;
            CHECK(std::string(error.what()).find('\n') == std::string::npos);
        }
    }
    CHECK(errors == static_cast<int64_t>(text.size()) - 1);
}

// ============================================================================================
// StackExchange Posts.xml
// ============================================================================================

namespace {

std::string posts_row(const std::string& attributes) { return "  <row " + attributes + " />\r\n"; }

// A byte-order mark and CRLF line ends, as in the real dumps. Question 1 (accepted answer 4)
// has answers with scores 7, 5, 5 (4 is accepted), -2; question 2 has two answers tied at 3
// and none accepted; question 3 has no answers; row 9 is a tag wiki; answer 10 comes before
// its question 11 in the file.
std::string posts_fixture() {
    return "\xEF\xBB\xBF<?xml version=\"1.0\" encoding=\"utf-8\"?>\r\n<posts>\r\n" +
           posts_row(R"(Id="1" PostTypeId="1" AcceptedAnswerId="4" Score="18" Title="What is a citra hop?" )"
                     R"(Body="&lt;p&gt;I was offered a beer &amp;amp; it had &lt;b&gt;citra&lt;/b&gt; hops.&lt;/p&gt;&#xA;")") +
           posts_row(R"(Id="2" PostTypeId="1" Score="3" Title="Lager &amp; ale?" Body="&lt;p&gt;Diff?&lt;/p&gt;")") +
           posts_row(R"(Id="3" PostTypeId="2" ParentId="1" Score="5" Body="&lt;p&gt;Five, not accepted&lt;/p&gt;")") +
           posts_row(R"(Id="4" PostTypeId="2" ParentId="1" Score="5" Body="&lt;p&gt;Five, accepted&lt;/p&gt;")") +
           posts_row(R"(Id="5" PostTypeId="2" ParentId="1" Score="7" Body="&lt;p&gt;Seven&lt;/p&gt;")") +
           posts_row(R"(Id="6" PostTypeId="2" ParentId="1" Score="-2" Body="&lt;p&gt;Minus two&lt;/p&gt;")") +
           posts_row(R"(Id="8" PostTypeId="2" ParentId="2" Score="3" Body="Eight")") +
           posts_row(R"(Id="7" PostTypeId="2" ParentId="2" Score="3" Body="Seven again")") +
           posts_row(R"(Id="9" PostTypeId="4" Score="0" Body="tag wiki")") +
           posts_row(R"(Id="10" PostTypeId="2" ParentId="11" Score="1" Body="&lt;p&gt;맥주 &amp;eacute; caf&amp;#233;&lt;/p&gt;")") +
           posts_row(R"(Id="11" PostTypeId="1" Score="0" Title="한국 맥주" Body="&lt;p&gt;질문&lt;/p&gt;")") +
           posts_row(R"(Id="12" PostTypeId="1" Score="0" Title="No answers" Body="")") + "</posts>\r\n";
}

}  // namespace

TEST_CASE("posts: questions, cleaned answers, ranks with ties (accepted first, then id), other types skipped") {
    TemporaryFile file(posts_fixture(), ".xml");
    RetrievalDataset dataset = read_stackexchange_posts(file.path(), Leniency::Strict);
    CHECK(dataset.report.records.at("questions") == 4);
    CHECK(dataset.report.records.at("answers") == 7);
    CHECK(dataset.report.skipped == std::map<std::string, int64_t>{{"other post type", 1}});

    REQUIRE(dataset.queries.size() == 4);
    CHECK(dataset.queries[0].id == "1");
    CHECK(dataset.queries[0].group == "1");
    CHECK(dataset.queries[0].text == "What is a citra hop?\nI was offered a beer & it had citra hops.");
    CHECK(dataset.queries[1].text == "Lager & ale?\nDiff?");
    CHECK(dataset.queries[2].text == "한국 맥주\n질문");
    CHECK(dataset.queries[3].text == "No answers\n");

    RelevanceTable table = relevance_table(dataset);
    using Row = std::tuple<std::string, int64_t, double, bool>;
    CHECK(table["1"] == std::vector<Row>{{"5", 0, 7.0, false}, {"4", 1, 5.0, true}, {"3", 2, 5.0, false},
                                         {"6", 3, -2.0, false}});
    CHECK(table["2"] == std::vector<Row>{{"7", 0, 3.0, false}, {"8", 1, 3.0, false}});
    CHECK(table["11"] == std::vector<Row>{{"10", 0, 1.0, false}});
    CHECK(table.count("12") == 0);

    for (const Passage& passage : dataset.passages) {
        if (passage.id == "10") {
            CHECK(passage.text == "맥주 é café");
            CHECK(passage.group == "11");
        }
        if (passage.id == "4") CHECK(passage.text == "Five, accepted");
    }
}

TEST_CASE("posts: an orphan answer is counted when lenient and an error naming file, line and ParentId when strict") {
    std::string text = replaced(posts_fixture(), "</posts>",
                                posts_row(R"(Id="20" PostTypeId="2" ParentId="99" Score="1" Body="lost")") + "</posts>");
    TemporaryFile orphan(text, ".xml");
    RetrievalDataset dataset = read_stackexchange_posts(orphan.path(), Leniency::Lenient);
    CHECK(dataset.report.records.at("answers") == 7);
    CHECK(dataset.report.skipped.at("answer whose question is absent") == 1);
    CHECK_ERROR_MENTIONS(read_stackexchange_posts(orphan.path(), Leniency::Strict), orphan.path() + ":15");
    CHECK_ERROR_MENTIONS(read_stackexchange_posts(orphan.path(), Leniency::Strict), "ParentId 99");
}

TEST_CASE("posts: cut-short rows and files, invalid UTF-8, bad rows and empty files") {
    std::string text = posts_fixture();
    size_t cut = text.find("Seven again");
    TemporaryFile truncated(text.substr(0, cut), ".xml");
    RetrievalDataset dataset = read_stackexchange_posts(truncated.path(), Leniency::Lenient);
    CHECK(dataset.report.skipped.at("malformed row") == 1);
    CHECK(dataset.report.skipped.at("file ends before </posts>") == 1);
    CHECK(dataset.report.records.at("answers") == 5);  // 3, 4, 5, 6, 8
    CHECK_ERROR_MENTIONS(read_stackexchange_posts(truncated.path(), Leniency::Strict), "cut short");

    TemporaryFile bad_utf8(replaced(text, "Seven again", "Seven\xC3 again"), ".xml");
    dataset = read_stackexchange_posts(bad_utf8.path(), Leniency::Lenient);
    CHECK(dataset.report.skipped.at("invalid UTF-8") == 1);
    CHECK(dataset.report.records.at("answers") == 6);
    CHECK_ERROR_MENTIONS(read_stackexchange_posts(bad_utf8.path(), Leniency::Strict), bad_utf8.path() + ":10");

    TemporaryFile no_score(replaced(text, R"(ParentId="2" Score="3" Body="Eight")", R"(ParentId="2" Body="Eight")"),
                           ".xml");
    dataset = read_stackexchange_posts(no_score.path(), Leniency::Lenient);
    CHECK(dataset.report.skipped.at("answer without ParentId, Score or Body") == 1);
    CHECK_ERROR_MENTIONS(read_stackexchange_posts(no_score.path(), Leniency::Strict), "answer 8");

    TemporaryFile duplicate(replaced(text, "Id=\"12\"", "Id=\"1\""), ".xml");
    CHECK_ERROR_MENTIONS(read_stackexchange_posts(duplicate.path(), Leniency::Strict), "Id 1 appears a second time");

    TemporaryFile empty("", ".xml");
    CHECK_ERROR_MENTIONS(read_stackexchange_posts(empty.path(), Leniency::Lenient), "empty");
    TemporaryFile not_posts("{\"json\": true}\n", ".xml");
    CHECK_ERROR_MENTIONS(read_stackexchange_posts(not_posts.path(), Leniency::Lenient), "no <posts>");

    // Every prefix of the file reads (leniently) without a crash, or fails with one line.
    for (size_t length = 1; length < text.size(); length += 7) {
        TemporaryFile prefix(text.substr(0, length), ".xml");
        try {
            read_stackexchange_posts(prefix.path(), Leniency::Lenient);
        } catch (const nce::Error& error) {
            CHECK(std::string(error.what()).find("no <posts>") != std::string::npos);
        }
    }
}

TEST_CASE("posts: a 50,000-row synthetic dump streams and ranks every question as the naive reference does") {
    // 10,000 questions with 4 answers each; scores repeat so that ties are common, and every
    // third question accepts its third answer.
    const int64_t questions = 10000, answers_per_question = 4;
    std::string text = "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<posts>\n";
    std::map<std::string, std::vector<NaiveAnswer>> expected;
    for (int64_t q = 0; q < questions; ++q) {
        int64_t question_id = q * (answers_per_question + 1) + 1;
        int64_t accepted_id = q % 3 == 0 ? question_id + 3 : -1;
        text += "  <row Id=\"" + std::to_string(question_id) + "\" PostTypeId=\"1\" Score=\"1\" Title=\"Question " +
                std::to_string(q) + "\" Body=\"&lt;p&gt;Body&lt;/p&gt;\"" +
                (accepted_id > 0 ? " AcceptedAnswerId=\"" + std::to_string(accepted_id) + "\"" : "") + " />\n";
        for (int64_t k = 1; k <= answers_per_question; ++k) {
            int64_t answer_id = question_id + k;
            int64_t score = (q * 7 + k * 3) % 3 - 1;
            text += "  <row Id=\"" + std::to_string(answer_id) + "\" PostTypeId=\"2\" ParentId=\"" +
                    std::to_string(question_id) + "\" Score=\"" + std::to_string(score) + "\" Body=\"answer\" />\n";
            expected[std::to_string(question_id)].push_back({answer_id, score, answer_id == accepted_id});
        }
    }
    text += "</posts>\n";
    TemporaryFile file(text, ".xml");

    auto start = std::chrono::steady_clock::now();
    RetrievalDataset dataset = read_stackexchange_posts(file.path(), Leniency::Strict);
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    MESSAGE("50,000-row Posts.xml (" << text.size() / 1000 << " kB) read in " << seconds << " s");
    CHECK(dataset.report.records.at("questions") == questions);
    CHECK(dataset.report.records.at("answers") == questions * answers_per_question);
    REQUIRE(dataset.relevance.size() == static_cast<size_t>(questions * answers_per_question));

    int64_t wrong = 0;
    for (const Relevance& relevance : dataset.relevance) {
        const std::vector<NaiveAnswer>& answers = expected[dataset.queries[relevance.query].id];
        int64_t answer_id = std::stoll(dataset.passages[relevance.passage].id);
        for (const NaiveAnswer& answer : answers)
            if (answer.id == answer_id)
                wrong += naive_rank(answer, answers) != relevance.rank || answer.accepted != relevance.accepted ||
                         static_cast<double>(answer.score) != relevance.score;
    }
    CHECK(wrong == 0);
}

namespace {

// A Posts.xml holding one question, titled "t", whose Body attribute is `body` as written.
std::string posts_with_body(const std::string& body) {
    return "<posts>\n" + posts_row("Id=\"1\" PostTypeId=\"1\" Score=\"0\" Title=\"t\" Body=\"" + body + "\"") +
           "</posts>\n";
}

std::string repeated(const std::string& piece, size_t times) {
    std::string text;
    text.reserve(piece.size() * times);
    for (size_t i = 0; i < times; ++i) text += piece;
    return text;
}

}  // namespace

TEST_CASE("posts: 8 MB of bare '&' in one attribute are read in one pass") {
    // For every '&' the entity decoders (XML, then HTML) looked for its ';' through the rest of
    // the text: 1 MB of '&' took 12 s; with that search put back this test had not finished
    // after 25 minutes. Now 0.3 s.
    const size_t ampersands = 8'000'000;
    TemporaryFile file(posts_with_body(std::string(ampersands, '&')), ".xml");
    RetrievalDataset dataset = read_stackexchange_posts(file.path(), Leniency::Strict);
    REQUIRE(dataset.queries.size() == 1);
    CHECK(dataset.queries[0].text == "t\n" + std::string(ampersands, '&'));
}

TEST_CASE("posts: a body of 1,000,000 unclosed tags is read in one pass") {
    // Every '<' whose tag never closes was followed to the end of the body in search of its
    // '>': 400,000 such tags took 99 s; with that search put back this test had not finished
    // after 25 minutes. Now 0.1 s.
    const size_t tags = 1'000'000;
    TemporaryFile file(posts_with_body(repeated("&lt;b", tags)), ".xml");
    RetrievalDataset dataset = read_stackexchange_posts(file.path(), Leniency::Strict);
    REQUIRE(dataset.queries.size() == 1);
    CHECK(dataset.queries[0].text == "t\n" + repeated("<b", tags));
}

TEST_CASE("posts: 340,000 ids aimed at one bucket of the id tables are read in one pass") {
    // std::hash<int64_t> is the identity: ids that are all multiples of the bucket count a
    // std::unordered_set ends with put every id in one bucket, and each insert walked all the
    // ids before it. 200,000 such questions took 39 s; with the plain hash put back this test
    // took 6 minutes. Now 0.7 s (ids are mixed with a per-process seed first).
    const int64_t questions = 340'000;
    std::unordered_set<int64_t> probe;
    for (int64_t id = 0; id < questions; ++id) probe.insert(id);
    const auto buckets = static_cast<int64_t>(probe.bucket_count());
    std::string text = "<posts>\n";
    for (int64_t k = 1; k <= questions; ++k)
        text += posts_row("Id=\"" + std::to_string(k * buckets) + "\" PostTypeId=\"1\" Title=\"\" Body=\"\"");
    TemporaryFile file(text + "</posts>\n", ".xml");
    RetrievalDataset dataset = read_stackexchange_posts(file.path(), Leniency::Strict);
    REQUIRE(dataset.queries.size() == static_cast<size_t>(questions));
    CHECK(dataset.queries.back().id == std::to_string(questions * buckets));
}

// ============================================================================================
// Ranked-QA JSON
// ============================================================================================

TEST_CASE("ranked-json: ids as numbers or strings, cleaned bodies, ranks by score with the accepted first") {
    const char* fixture = R"([
      {"question": {"id": 101, "title": "Best &amp; worst hops?", "body": "<p>Which?</p>", "score": 4},
       "answers": [{"id": 1, "body": "<p>Citra</p>", "score": 2, "is_accepted": false},
                   {"id": "2", "body": "Saaz &amp; Hallertau", "score": 9},
                   {"id": 3, "body": "<i>Cascade</i>", "score": 2, "is_accepted": true}]},
      {"question": {"id": "q2", "title": "한국 맥주?"}, "answers": []}
    ])";
    TemporaryFile file(fixture, ".json");
    RetrievalDataset dataset = read_ranked_qa_json(file.path(), Leniency::Strict);
    CHECK(dataset.report.records.at("questions") == 2);
    CHECK(dataset.report.records.at("answers") == 3);
    REQUIRE(dataset.queries.size() == 2);
    CHECK(dataset.queries[0].text == "Best &amp; worst hops?\nWhich?");  // titles are plain text
    CHECK(dataset.queries[1].text == "한국 맥주?\n");
    CHECK(dataset.queries[1].group == "q2");
    RelevanceTable table = relevance_table(dataset);
    using Row = std::tuple<std::string, int64_t, double, bool>;
    CHECK(table["101"] == std::vector<Row>{{"2", 0, 9.0, false}, {"3", 1, 2.0, true}, {"1", 2, 2.0, false}});
    CHECK(dataset.passages[1].text == "Saaz & Hallertau");
    CHECK(dataset.passages[2].text == "Cascade");
}

TEST_CASE("ranked-json: bad records are skipped or named; bad files are one-line errors") {
    const char* fixture = R"([
      {"question": {"id": 1, "title": "ok"}, "answers": [{"id": 5, "body": "no score"}, {"id": 6, "body": "b", "score": 1}]},
      {"question": {"title": "no id"}, "answers": []},
      "not a record"
    ])";
    TemporaryFile file(fixture, ".json");
    RetrievalDataset dataset = read_ranked_qa_json(file.path(), Leniency::Lenient);
    CHECK(dataset.report.records.at("questions") == 1);
    CHECK(dataset.report.records.at("answers") == 1);
    CHECK(dataset.report.skipped.at("answer without id, body or score") == 1);
    CHECK(dataset.report.skipped.at("question without id or title") == 2);
    CHECK_ERROR_MENTIONS(read_ranked_qa_json(file.path(), Leniency::Strict), "question 1: an answer needs");

    TemporaryFile truncated(std::string(fixture).substr(0, 60), ".json");
    CHECK_ERROR_MENTIONS(read_ranked_qa_json(truncated.path(), Leniency::Lenient), "truncated");
    TemporaryFile empty("", ".json");
    CHECK_ERROR_MENTIONS(read_ranked_qa_json(empty.path(), Leniency::Lenient), "empty");
    TemporaryFile bad_utf8("[{\"question\": {\"id\": 1, \"title\": \"\xE0\x80\"}, \"answers\": []}]", ".json");
    CHECK_ERROR_MENTIONS(read_ranked_qa_json(bad_utf8.path(), Leniency::Lenient), "invalid UTF-8");
    TemporaryFile object("{\"question\": {}}", ".json");
    CHECK_ERROR_MENTIONS(read_ranked_qa_json(object.path(), Leniency::Lenient), "top level must be an array");
}

TEST_CASE("ranked-json: a question or answer id given twice is skipped (lenient) or named (strict)") {
    const char* fixture = R"([
      {"question": {"id": 1, "title": "a"}, "answers": [{"id": 8, "body": "x", "score": 1}, {"id": "8", "body": "y", "score": 2}]},
      {"question": {"id": "1", "title": "b"}, "answers": [{"id": 9, "body": "z", "score": 1}]},
      {"question": {"id": 18446744073709551615, "title": "c"}, "answers": []}
    ])";
    TemporaryFile file(fixture, ".json");
    RetrievalDataset dataset = read_ranked_qa_json(file.path(), Leniency::Lenient);
    CHECK(dataset.report.skipped.at("duplicate or oversized answer id") == 1);
    CHECK(dataset.report.skipped.at("duplicate question id") == 1);
    REQUIRE(dataset.queries.size() == 2);
    CHECK(dataset.queries[1].id == "18446744073709551615");  // as written, not wrapped
    CHECK(dataset.passages.size() == 1);
    CHECK_ERROR_MENTIONS(read_ranked_qa_json(file.path(), Leniency::Strict), "the answer id \"8\" is used by another");
}

TEST_CASE("ranked-json: a question id longer than 1,024 bytes skips the question: it would be copied into every answer") {
    // 10,000 answers under a 100 kB id: a 0.5 MB file that read whole would be a 1 GB data set.
    const size_t answers = 10'000;
    auto file_with_id = [&](const std::string& id) {
        std::string json = "[{\"question\": {\"id\": \"" + id + "\", \"title\": \"t\"}, \"answers\": [";
        for (size_t a = 0; a < answers; ++a)
            json += fmt::format("{}{{\"id\": {}, \"body\": \"b\", \"score\": 1}}", a ? ", " : "", a);
        return json + "]}, {\"question\": {\"id\": 1, \"title\": \"t\"}, \"answers\": []}]";
    };
    TemporaryFile file(file_with_id(std::string(100'000, 'i')), ".json");
    RetrievalDataset dataset = read_ranked_qa_json(file.path(), Leniency::Lenient);
    CHECK(dataset.report.records.at("questions") == 1);
    CHECK(dataset.report.records.at("answers") == 0);
    CHECK(dataset.report.skipped.at("question with an id too long") == 1);
    CHECK_ERROR_MENTIONS(read_ranked_qa_json(file.path(), Leniency::Strict),
                         file.path() + ": record 0 has a question id of 100000 bytes, more than the 1024");

    TemporaryFile longest(file_with_id(std::string(1024, 'i')), ".json");
    CHECK(read_ranked_qa_json(longest.path(), Leniency::Strict).passages.size() == answers);
}

// ============================================================================================
// Split by group
// ============================================================================================

namespace {

// 60 groups of 1..7 queries; each query has its own passage, every group also one passage
// shared by all its queries and one passage relevant to none; passage "shared-across" is
// relevant to a query of group 0 and one of group 1.
RetrievalDataset grouped_dataset() {
    RetrievalDataset dataset;
    dataset.name = "synthetic";
    for (int group = 0; group < 60; ++group) {
        std::string group_name = "g" + std::to_string(group);
        int64_t shared = static_cast<int64_t>(dataset.passages.size());
        dataset.passages.push_back({group_name + "-shared", "text", group_name});
        dataset.passages.push_back({group_name + "-unreferenced", "text", group_name});
        for (int k = 0; k < 1 + group % 7; ++k) {
            auto query = static_cast<int64_t>(dataset.queries.size());
            dataset.queries.push_back({group_name + "-q" + std::to_string(k), "text", group_name});
            dataset.passages.push_back({group_name + "-p" + std::to_string(k), "text", group_name});
            dataset.relevance.push_back({query, static_cast<int64_t>(dataset.passages.size()) - 1, 2.0, 0, true});
            dataset.relevance.push_back({query, shared, 1.0, 1, false});
        }
    }
    auto across = static_cast<int64_t>(dataset.passages.size());
    dataset.passages.push_back({"shared-across", "text", "g0"});
    dataset.relevance.push_back({0, across, 0.5, 2, false});   // g0-q0
    dataset.relevance.push_back({1, across, 0.5, 2, false});   // g1-q0
    return dataset;
}

// (query id, passage id, score, rank, accepted) of every relevance row.
std::multiset<std::tuple<std::string, std::string, double, int64_t, bool>> relevance_rows(const RetrievalDataset& d) {
    std::multiset<std::tuple<std::string, std::string, double, int64_t, bool>> rows;
    for (const Relevance& r : d.relevance)
        rows.emplace(d.queries[r.query].id, d.passages[r.passage].id, r.score, r.rank, r.accepted);
    return rows;
}

std::vector<std::string> query_ids(const RetrievalDataset& dataset) {
    std::vector<std::string> ids;
    for (const Query& query : dataset.queries) ids.push_back(query.id);
    return ids;
}

}  // namespace

TEST_CASE("split: queries are partitioned by group, passages follow them, relevance is re-indexed, the seed decides") {
    RetrievalDataset dataset = grouped_dataset();
    DatasetSplits splits = split_by_group(dataset, 0.2, 0.1, 7);
    const RetrievalDataset* sides[] = {&splits.train, &splits.validation, &splits.test};

    // Every query on exactly one side, every group on exactly one side.
    std::map<std::string, int> side_of_query;
    std::map<std::string, std::set<int>> sides_of_group;
    for (int side = 0; side < 3; ++side)
        for (const Query& query : sides[side]->queries) {
            ++side_of_query[query.id];
            sides_of_group[query.group].insert(side);
        }
    CHECK(side_of_query.size() == dataset.queries.size());
    for (const auto& [id, count] : side_of_query) CHECK(count == 1);
    for (const auto& [group, on] : sides_of_group) CHECK(on.size() == 1);

    // The union of the sides' relevance rows, by ids, is the original's.
    std::multiset<std::tuple<std::string, std::string, double, int64_t, bool>> rows;
    for (const RetrievalDataset* side : sides) {
        auto side_rows = relevance_rows(*side);
        rows.insert(side_rows.begin(), side_rows.end());
        for (const Relevance& r : side->relevance) {
            CHECK(r.query < static_cast<int64_t>(side->queries.size()));
            CHECK(r.passage < static_cast<int64_t>(side->passages.size()));
        }
    }
    CHECK(rows == relevance_rows(dataset));

    // Each unreferenced passage sits with its group; the cross-group passage is on every side
    // one of its queries went to.
    for (int side = 0; side < 3; ++side)
        for (const Passage& passage : sides[side]->passages)
            if (passage.id.find("unreferenced") != std::string::npos)
                CHECK(*sides_of_group[passage.group].begin() == side);
    size_t total_passages = 0;
    for (const RetrievalDataset* side : sides) total_passages += side->passages.size();
    bool across_split = *sides_of_group["g0"].begin() != *sides_of_group["g1"].begin();
    CHECK(total_passages == dataset.passages.size() + (across_split ? 1 : 0));

    // Shares: each side reaches its target, overshooting by less than one group (<= 7 queries).
    auto total = static_cast<int64_t>(dataset.queries.size());
    auto test_size = static_cast<int64_t>(splits.test.queries.size());
    auto validation_size = static_cast<int64_t>(splits.validation.queries.size());
    CHECK(test_size >= std::llround(0.1 * total));
    CHECK(test_size < std::llround(0.1 * total) + 7);
    CHECK(validation_size >= std::llround(0.2 * total));
    CHECK(validation_size < std::llround(0.2 * total) + 7);

    // Same seed, same split; another seed, another split.
    DatasetSplits again = split_by_group(dataset, 0.2, 0.1, 7);
    CHECK(query_ids(again.train) == query_ids(splits.train));
    CHECK(query_ids(again.test) == query_ids(splits.test));
    DatasetSplits other = split_by_group(dataset, 0.2, 0.1, 8);
    CHECK(query_ids(other.test) != query_ids(splits.test));
    CHECK(splits.test.name == "synthetic/test");

    // Zero fractions keep everything in train.
    DatasetSplits all_train = split_by_group(dataset, 0, 0, 1);
    CHECK(all_train.train.queries.size() == dataset.queries.size());
    CHECK(all_train.train.passages.size() == dataset.passages.size());
    CHECK(all_train.test.queries.empty());
}

TEST_CASE("split: bad fractions and relevance that points nowhere are one-line errors") {
    RetrievalDataset dataset = grouped_dataset();
    CHECK_ERROR_MENTIONS(split_by_group(dataset, 1.2, 0.1, 1), "validation_fraction must be in [0, 1)");
    CHECK_ERROR_MENTIONS(split_by_group(dataset, 0.1, -0.1, 1), "test_fraction");
    CHECK_ERROR_MENTIONS(split_by_group(dataset, std::nan(""), 0.1, 1), "validation_fraction");
    CHECK_ERROR_MENTIONS(split_by_group(dataset, 0.6, 0.4, 1), "below 1");
    dataset.relevance.push_back({0, 100000, 1.0, 0, false});
    CHECK_ERROR_MENTIONS(split_by_group(dataset, 0.1, 0.1, 1), "passage 100000");
}

// ============================================================================================
// The real files, when ../shared/data is there
// ============================================================================================

TEST_CASE("real data: KorQuAD 1.0 dev has 140 articles, 964 paragraphs, 5,774 questions, every answer where it says") {
    fs::path folder = shared_data_folder();
    fs::path file = folder / "korquad" / "KorQuAD_v1.0_dev.json";
    if (folder.empty() || !fs::exists(file)) {
        MESSAGE("skipped: no " << file.string() << " (set NCE_SOURCE_ROOT to the project root)");
        return;
    }
    RetrievalDataset dataset = read_korquad(file.string(), Leniency::Strict);
    MESSAGE("KorQuAD dev: " << dataset.queries.size() << " questions, " << dataset.passages.size() << " passages in "
                            << dataset.report.seconds << " s");
    CHECK(dataset.report.records.at("articles") == 140);
    CHECK(dataset.report.records.at("paragraphs") == 964);
    CHECK(dataset.report.records.at("questions") == 5774);
    CHECK(dataset.report.records.at("passages") == 961);  // three contexts appear twice
    CHECK(dataset.report.skipped.empty());

    DatasetSplits splits = split_by_group(dataset, 0.1, 0.1, 1);
    CHECK(splits.train.queries.size() + splits.validation.queries.size() + splits.test.queries.size() == 5774);
}

TEST_CASE("real data: the beer StackExchange Posts.xml has 663 questions, 1,572 answers, 410 with two or more") {
    fs::path folder = shared_data_folder();
    fs::path file = folder / "stackexchange" / "beer" / "Posts.xml";
    if (folder.empty() || !fs::exists(file)) {
        MESSAGE("skipped: no " << file.string() << " (set NCE_SOURCE_ROOT to the project root)");
        return;
    }
    RetrievalDataset dataset = read_stackexchange_posts(file.string(), Leniency::Strict);
    MESSAGE("beer Posts.xml: " << dataset.queries.size() << " questions, " << dataset.passages.size() << " answers in "
                               << dataset.report.seconds << " s");
    CHECK(dataset.report.records.at("questions") == 663);
    CHECK(dataset.report.records.at("answers") == 1572);
    std::map<int64_t, int64_t> answers_per_query;
    double lowest = 1e9, highest = -1e9;
    for (const Relevance& relevance : dataset.relevance) {
        ++answers_per_query[relevance.query];
        lowest = std::min(lowest, relevance.score);
        highest = std::max(highest, relevance.score);
    }
    int64_t with_two_or_more = 0;
    for (const auto& [query, count] : answers_per_query) with_two_or_more += count >= 2;
    CHECK(with_two_or_more == 410);
    CHECK(lowest == -5);
    CHECK(highest == 40);
    for (const Passage& passage : dataset.passages) CHECK(is_valid_utf8(passage.text));
}
