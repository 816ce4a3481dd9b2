// nce mine's miner (retrieval/pairs/hard_negative_miner.h) and its BM25 scorer: the rank range,
// both margins against the lowest positive, positives (and their white-space twins) never
// mined, K and dropping, ties broken by candidate order, reciprocal rank fusion with each
// scorer's margin, the random pick, and the CSV read back by the pairs reader.
#include <map>

#include "retrieval/pairs/candidate_scorers.h"
#include "retrieval/pairs/hard_negative_miner.h"
#include "engine/threads.h"
#include "tests/test_helpers.h"

using namespace nce;
using namespace nce::pairs;

namespace {

constexpr double kNoFloor = -std::numeric_limits<double>::infinity();

MiningSettings settings_with(int64_t first, int64_t last, int64_t negatives) {
    MiningSettings settings;
    settings.range = {first, last};
    settings.negatives_per_query = negatives;
    return settings;
}

// A scorer with a fixed score list per anchor text.
class TableScorer : public CandidateScorer {
public:
    explicit TableScorer(std::map<std::string, std::vector<double>> table, double floor = kNoFloor)
        : table_(std::move(table)), floor_(floor) {}
    std::string name() const override { return "table"; }
    std::vector<QueryScores> score(const std::vector<std::string>& anchors) const override {
        std::vector<QueryScores> result;
        for (const std::string& anchor : anchors) result.push_back({table_.at(anchor), floor_});
        return result;
    }

private:
    std::map<std::string, std::vector<double>> table_;
    double floor_;
};

data::PairsFile pairs_file(const std::vector<std::vector<std::string>>& rows, bool query_id = false) {
    // rows: {anchor, positive [, negative...]} or, with query_id, {query_id, anchor, positive ...}
    data::PairsFile file;
    file.path = "pairs.csv";
    file.has_query_id = query_id;
    int64_t line = 2;
    for (const std::vector<std::string>& cells : rows) {
        data::PairsRow row;
        size_t first = query_id ? 1 : 0;
        row.line = line++;
        row.anchor = cells[first];
        row.positive = cells[first + 1];
        row.negatives.assign(cells.begin() + static_cast<std::ptrdiff_t>(first + 2), cells.end());
        row.query_key = query_id ? cells[0] : row.anchor;
        file.rows.push_back(row);
    }
    return file;
}

}  // namespace

TEST_CASE("mine: --range parses FIRST:LAST and names the flag and the fix when it cannot") {
    RankRange range = parse_rank_range("10:100");
    CHECK(range.first == 10);
    CHECK(range.last == 100);
    CHECK(parse_rank_range("3:3").last == 3);
    CHECK_ERROR_MENTIONS(parse_rank_range("0:5"), "--range 0:5: ranks count from 1");
    CHECK_ERROR_MENTIONS(parse_rank_range("10:5"), "--range 10:5: FIRST must not exceed LAST");
    CHECK_ERROR_MENTIONS(parse_rank_range("10"), "--range '10': give the ranks as FIRST:LAST");
    CHECK_ERROR_MENTIONS(parse_rank_range("a:b"), "FIRST:LAST");
    CHECK_ERROR_MENTIONS(parse_rank_range("1:-3"), "FIRST must not exceed LAST");
}

TEST_CASE("mine: settings out of range are one error naming the flag") {
    MiningSettings settings = settings_with(1, 10, 0);
    CHECK_ERROR_MENTIONS(check_mining_settings(settings), "--negatives 0");
    settings = settings_with(1, 3, 4);
    CHECK_ERROR_MENTIONS(check_mining_settings(settings), "fewer than --negatives 4");
    settings = settings_with(1, 10, 2);
    settings.absolute_margin = -0.1;
    CHECK_ERROR_MENTIONS(check_mining_settings(settings), "--absolute-margin -0.1");
    settings = settings_with(1, 10, 2);
    settings.relative_margin = 1.0;
    CHECK_ERROR_MENTIONS(check_mining_settings(settings), "--relative-margin 1");
    settings.relative_margin = -0.01;
    CHECK_ERROR_MENTIONS(check_mining_settings(settings), "--relative-margin -0.01");
    settings.relative_margin = 0.05;
    CHECK_NOTHROW(check_mining_settings(settings));
}

TEST_CASE("mine: the margin threshold, absolute, relative (also for a negative positive score), both") {
    MiningSettings settings = settings_with(1, 10, 1);
    CHECK(margin_threshold(0.8, settings) == std::numeric_limits<double>::infinity());
    settings.absolute_margin = 0.05;
    CHECK(margin_threshold(0.8, settings) == doctest::Approx(0.75));
    settings.absolute_margin.reset();
    settings.relative_margin = 0.05;
    CHECK(margin_threshold(10.0, settings) == doctest::Approx(9.5));    // 95% of the positive
    CHECK(margin_threshold(-0.5, settings) == doctest::Approx(-0.525));  // still below the positive
    settings.absolute_margin = 1.0;
    CHECK(margin_threshold(10.0, settings) == doctest::Approx(9.0));    // both: the stricter
    settings.absolute_margin = 0.1;
    CHECK(margin_threshold(10.0, settings) == doctest::Approx(9.5));
}

TEST_CASE("mine: ranking leaves out the excluded and the floor, cuts at depth, breaks ties by candidate order") {
    QueryScores scores{{0.5, 0.9, 0.5, 0.0, 0.9, 0.7}, 0.0};
    CHECK(rank_candidates(scores, {}, 10) == std::vector<int64_t>{1, 4, 5, 0, 2});  // 3 is at the floor
    CHECK(rank_candidates(scores, {1}, 10) == std::vector<int64_t>{4, 5, 0, 2});
    CHECK(rank_candidates(scores, {1}, 2) == std::vector<int64_t>{4, 5});
    scores.floor = kNoFloor;
    CHECK(rank_candidates(scores, {}, 10) == std::vector<int64_t>{1, 4, 5, 0, 2, 3});
}

TEST_CASE("mine: the range takes ranks FIRST..LAST, counted without the query's positives") {
    // Candidate 0 is the positive; the others rank 1..5 in index order.
    std::vector<QueryScores> scorers{{{10, 9, 8, 7, 6, 5}, kNoFloor}};
    QueryNegatives mined = mine_query(scorers, {0}, {0}, settings_with(2, 4, 2), 0);
    CHECK(mined.negatives == std::vector<int64_t>{2, 3});
    mined = mine_query(scorers, {0}, {0}, settings_with(4, 5, 2), 0);
    CHECK(mined.negatives == std::vector<int64_t>{4, 5});
    mined = mine_query(scorers, {0}, {0}, settings_with(5, 8, 2), 0);  // past the end: fewer than K
    CHECK(mined.negatives == std::vector<int64_t>{5});
}

TEST_CASE("mine: the absolute margin removes candidates scoring near or above the positive") {
    // Positive 0.8; margin 0.05 keeps scores < 0.75.
    std::vector<QueryScores> scorers{{{0.8, 0.9, 0.79, 0.76, 0.7, 0.5, 0.4}, kNoFloor}};
    MiningSettings settings = settings_with(1, 10, 2);
    settings.absolute_margin = 0.05;
    QueryNegatives mined = mine_query(scorers, {0}, {0}, settings, 0);
    CHECK(mined.negatives == std::vector<int64_t>{4, 5});
    CHECK(mined.removed_by_margin == 3);  // 0.9, 0.79 and 0.76
    settings.absolute_margin.reset();
    CHECK(mine_query(scorers, {0}, {0}, settings, 0).negatives == std::vector<int64_t>{1, 2});
}

TEST_CASE("mine: the relative margin keeps scores below positive x (1 - R), and below the positive when it is negative") {
    MiningSettings settings = settings_with(1, 10, 2);
    settings.relative_margin = 0.05;
    std::vector<QueryScores> scorers{{{10.0, 9.6, 9.55, 9.4, 3.0}, 0.0}};
    QueryNegatives mined = mine_query(scorers, {0}, {0}, settings, 0);
    CHECK(mined.negatives == std::vector<int64_t>{3, 4});
    CHECK(mined.removed_by_margin == 2);
    settings.relative_margin = 0.1;  // positive -0.5: keep below -0.55
    scorers = {{{-0.5, -0.3, -0.52, -0.6, -0.9}, kNoFloor}};
    mined = mine_query(scorers, {0}, {0}, settings, 0);
    CHECK(mined.negatives == std::vector<int64_t>{3, 4});
    CHECK(mined.removed_by_margin == 2);
}

TEST_CASE("mine: with several positives the margin is against the lowest-scoring one") {
    // Positives 0 (0.9) and 1 (0.6); a candidate at 0.7 scores above a known answer.
    std::vector<QueryScores> scorers{{{0.9, 0.6, 0.7, 0.58, 0.3}, kNoFloor}};
    MiningSettings settings = settings_with(1, 10, 1);
    settings.absolute_margin = 0.0;
    QueryNegatives mined = mine_query(scorers, {0, 1}, {0, 1}, settings, 0);
    CHECK(mined.negatives == std::vector<int64_t>{3});
    CHECK(mined.removed_by_margin == 1);
}

TEST_CASE("mine: reciprocal rank fusion by hand, ties by candidate order, and each scorer's margin") {
    // rrf_k = 60. a = {1, 2, 3}, b = {3, 1, 4}:
    //   1: 1/61 + 1/62    3: 1/63 + 1/61    2: 1/62    4: 1/63
    std::vector<int64_t> fused = reciprocal_rank_fusion({{1, 2, 3}, {3, 1, 4}}, 60, 10);
    CHECK(fused == std::vector<int64_t>{1, 3, 2, 4});
    CHECK(reciprocal_rank_fusion({{1, 2, 3}, {3, 1, 4}}, 60, 2) == std::vector<int64_t>{1, 3});
    CHECK(reciprocal_rank_fusion({{2, 5}, {5, 2}}, 60, 10) == std::vector<int64_t>{2, 5});  // a tie

    // Two scorers, candidate 0 the positive. The fused order is 1, 2, 3, 4; candidate 1 passes
    // the first scorer's margin but not the second's, so it is never mined.
    std::vector<QueryScores> scorers{{{1.0, 0.9, 0.8, 0.7, 0.1}, kNoFloor}, {{1.0, 0.99, 0.8, 0.7, 0.2}, kNoFloor}};
    MiningSettings settings = settings_with(1, 10, 2);
    settings.absolute_margin = 0.05;
    QueryNegatives mined = mine_query(scorers, {0}, {0}, settings, 0);
    CHECK(mined.negatives == std::vector<int64_t>{2, 3});
    CHECK(mined.removed_by_margin == 1);
}

TEST_CASE("mine: the candidates and queries of a pairs file; positives and their white-space twins never mined") {
    data::PairsFile file = pairs_file({{"q1", "where is a", "a is here", "b is there"},
                                       {"q1", "where is a", "a is  here too"},
                                       {"q2", "where is b", "b is there", "a is here"},
                                       {"q1", "where is a", "a is here"}},
                                      true);
    MiningInput input = mining_input(file, {"a is here too", "c is far", "b is there", "where is b"});
    CHECK(input.candidates == std::vector<std::string>{"a is here", "b is there", "a is  here too", "a is here too",
                                                       "c is far", "where is b"});
    CHECK(input.file_candidates == 3);
    REQUIRE(input.queries.size() == 2);
    CHECK(input.queries[0].query_id == "q1");
    CHECK(input.queries[0].positives == std::vector<int64_t>{0, 2});  // the repeated row counted once
    CHECK(input.queries[0].excluded == std::vector<int64_t>{0, 2, 3});  // "a is here too" is a twin of a positive
    CHECK(input.queries[1].positives == std::vector<int64_t>{1});
    CHECK(input.queries[1].excluded == std::vector<int64_t>{1, 5});     // its anchor, found in the corpus

    // Mined with BM25 over everything, no query ever gets one of its excluded texts.
    Bm25CandidateScorer bm25(input.candidates, eval::LexicalTokens::Whitespace, {});
    MiningResult result = mine_pairs(input, {&bm25}, settings_with(1, 10, 3));
    for (size_t q = 0; q < input.queries.size(); ++q)
        for (int64_t negative : result.negatives[q].negatives)
            CHECK_FALSE(std::binary_search(input.queries[q].excluded.begin(), input.queries[q].excluded.end(), negative));
    // "where is b" shares two words with "where is a"; "b is there" and "c is far" one each and
    // tie, so the lower candidate index goes first.
    CHECK(result.negatives[0].negatives == std::vector<int64_t>{5, 1, 4});
}

TEST_CASE("mine: a query with fewer than K negatives is dropped and counted; the CSV holds the others") {
    data::PairsFile file = pairs_file({{"one", "p1"}, {"two", "p2"}, {"two", "p2b"}, {"three", "p3"}});
    MiningInput input = mining_input(file, {"c1", "c2"});
    // Candidates: p1 p2 p2b p3 c1 c2. Query "two" scores only c1 above the floor.
    TableScorer scorer({{"one", {5, 1, 1, 1, 4, 3}}, {"two", {0, 5, 5, 0, 2, 0}}, {"three", {1, 2, 0, 5, 0, 3}}}, 0.0);
    MiningResult result = mine_pairs(input, {&scorer}, settings_with(1, 10, 2));
    CHECK(result.summary.queries == 3);
    CHECK(result.summary.candidates == 6);
    CHECK(result.summary.queries_kept == 2);
    CHECK(result.summary.rows_written == 2);
    CHECK(result.summary.queries_dropped == 1);
    CHECK(result.summary.rows_dropped == 2);
    CHECK(result.summary.dropped_after_margin == 0);  // its ranking was too short
    CHECK(result.negatives[0].negatives == std::vector<int64_t>{4, 5});
    CHECK(result.negatives[2].negatives == std::vector<int64_t>{5, 1});
    std::string csv = mined_pairs_csv(input, result, 2);
    CHECK(csv == "anchor,positive,negative_1,negative_2\n"
                 "\"one\",\"p1\",\"c1\",\"c2\"\n"
                 "\"three\",\"p3\",\"c2\",\"p2\"\n");
}

TEST_CASE("mine: equal scores break by candidate order, whatever the threads and blocks") {
    std::vector<std::vector<std::string>> rows;
    std::vector<std::string> corpus;
    for (int i = 0; i < 40; ++i) {
        rows.push_back({"query " + std::to_string(i % 13), "answer " + std::to_string(i)});
        corpus.push_back("other " + std::to_string(i));
    }
    MiningInput input = mining_input(pairs_file(rows), corpus);
    std::map<std::string, std::vector<double>> table;
    for (const MiningQuery& query : input.queries)  // every candidate scores the same
        table[query.anchor] = std::vector<double>(input.candidates.size(), 1.0);
    TableScorer scorer(table);
    MiningSettings settings = settings_with(1, 100, 4);
    MiningResult result = mine_pairs(input, {&scorer}, settings);
    // Query 0's positives are answers 0, 13, 26, 39 (candidates 0, 13, 26, 39): its first
    // four others are candidates 1, 2, 3, 4.
    CHECK(result.negatives[0].negatives == std::vector<int64_t>{1, 2, 3, 4});
    CHECK(result.negatives[1].negatives == std::vector<int64_t>{0, 2, 3, 4});
    std::string expected = mined_pairs_csv(input, result, 4);
    int threads = num_threads();
    for (int thread_count : {1, 2}) {
        set_num_threads(thread_count);
        for (int64_t block : {1, 5, 256})
            CHECK(mined_pairs_csv(input, mine_pairs(input, {&scorer}, settings, block), 4) == expected);
    }
    set_num_threads(threads);
}

TEST_CASE("mine: the random pick draws K of those that pass, in rank order, the same for the same seed") {
    std::vector<double> scores{1.0};
    for (int i = 1; i <= 30; ++i) scores.push_back(1.0 - i / 100.0);  // candidate i ranks i
    std::vector<QueryScores> scorers{{scores, kNoFloor}};
    MiningSettings settings = settings_with(1, 30, 5);
    settings.pick = NegativePick::Random;
    settings.absolute_margin = 0.1;  // keeps candidates 11..30 (score < 0.9)
    QueryNegatives first = mine_query(scorers, {0}, {0}, settings, 7);
    REQUIRE(first.negatives.size() == 5);
    CHECK(std::is_sorted(first.negatives.begin(), first.negatives.end()));
    for (int64_t negative : first.negatives) CHECK(negative >= 11);
    CHECK(first.removed_by_margin == 10);
    CHECK(mine_query(scorers, {0}, {0}, settings, 7).negatives == first.negatives);
    bool any_other = false;
    for (uint64_t seed = 1; seed < 6; ++seed) {
        settings.seed = seed;
        any_other = any_other || mine_query(scorers, {0}, {0}, settings, 7).negatives != first.negatives;
    }
    CHECK(any_other);
}

TEST_CASE("mine: the CSV reads back as a pairs file with K negative columns, quotes and line breaks intact") {
    data::PairsFile file = pairs_file({{"7", "a \"quoted\" question, with a comma", "line one\nline two"},
                                       {"8", "second question", "second answer"}},
                                      true);
    MiningInput input = mining_input(file, {"x, y", "say \"hi\"", "plain"});
    TableScorer scorer({{"a \"quoted\" question, with a comma", {9, 1, 3, 2, 1}},
                        {"second question", {0, 9, 1, 2, 3}}});
    MiningResult result = mine_pairs(input, {&scorer}, settings_with(1, 3, 2));
    testing::TemporaryFile written(mined_pairs_csv(input, result, 2), ".csv");
    data::PairsFile read = data::read_pairs_file(written.path(), data::PairsFormat::Csv, data::Leniency::Strict);
    CHECK(read.has_query_id);
    CHECK(read.negative_columns == 2);
    REQUIRE(read.rows.size() == 2);
    CHECK(read.rows[0].query_key == "7");
    CHECK(read.rows[0].anchor == "a \"quoted\" question, with a comma");
    CHECK(read.rows[0].positive == "line one\nline two");
    CHECK(read.rows[0].negatives == std::vector<std::string>{"x, y", "say \"hi\""});
    CHECK(read.rows[1].negatives == std::vector<std::string>{"plain", "say \"hi\""});
}
