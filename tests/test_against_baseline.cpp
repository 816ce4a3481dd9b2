// Rows of a run's table against BM25 (retrieval/report/against_baseline.h): the paired test
// sees a difference that overlapping intervals hide, sees none where two rows only trade
// queries, and marks the direction.
#include <string>
#include <vector>

#include "retrieval/report/against_baseline.h"
#include "retrieval/report/metric_table.h"
#include "eval/bootstrap.h"
#include "tests/test_helpers.h"

using namespace nce;
using namespace nce::retrieval;

namespace {

// A row as score_rankings makes it, from per-query values of recall@1 alone, with its interval.
MetricRow row_of(const std::string& name, const std::vector<double>& per_query, const eval::BootstrapOptions& options) {
    double sum = 0;
    for (double value : per_query) sum += value;
    eval::ConfidenceInterval interval = eval::bootstrap_interval(per_query, options);
    return {name, {{"recall@1", sum / static_cast<double>(per_query.size())}}, {{"recall@1", interval}},
            {{"recall@1", per_query}}};
}

}  // namespace

TEST_CASE("against the baseline: a paired gain inside overlapping intervals, a trade, a loss") {
    // 200 queries. BM25 finds 90 first. "gains" finds the same 90 and 12 more, so it is never
    // worse on a query; "trades" finds 90 as well, 45 of them other queries; "worse" finds 60
    // of BM25's 90 and nothing else.
    std::vector<double> bm25(200, 0.0), gains(200, 0.0), trades(200, 0.0), worse(200, 0.0);
    for (size_t q = 0; q < 90; ++q) bm25[q] = 1.0;
    for (size_t q = 0; q < 102; ++q) gains[q] = 1.0;
    for (size_t q = 45; q < 135; ++q) trades[q] = 1.0;
    for (size_t q = 0; q < 60; ++q) worse[q] = 1.0;
    eval::BootstrapOptions bootstrap{1000, 13, 0.95};
    MetricTable table{"test", {"recall@1"},
                      {row_of("BM25 (whitespace)", bm25, bootstrap), row_of("gains", gains, bootstrap),
                       row_of("trades", trades, bootstrap), row_of("worse", worse, bootstrap)}};
    // The marginal intervals of BM25 (.45) and "gains" (.51) overlap...
    CHECK(table.row("gains").intervals.at("recall@1").low < table.row("BM25 (whitespace)").intervals.at("recall@1").high);

    BaselineComparison result = mark_rows_against_baseline(table, "BM25 (whitespace)", {"gains", "trades", "worse"},
                                                           "recall@1", 0.05, bootstrap);
    REQUIRE(result.rows.size() == 3);
    // ...yet every replicate keeps the gain positive: beyond the noise.
    CHECK(result.rows[0].row == "gains");
    CHECK(result.rows[0].test.difference == doctest::Approx(0.06));
    CHECK(result.rows[0].test.significant());
    CHECK(result.rows[0].test.low > 0);
    // Trading queries is no difference, however many are traded.
    CHECK(result.rows[1].test.difference == doctest::Approx(0.0));
    CHECK_FALSE(result.rows[1].test.significant());
    CHECK(result.rows[2].test.difference == doctest::Approx(-0.15));
    CHECK(result.rows[2].test.significant());

    CHECK(table.mark_column == "vs BM25 (whitespace) recall@1");
    CHECK(table.row("gains").mark == "+0.060 p<0.001 *");
    CHECK(table.row("trades").mark == "+0.000 p=1.000");
    CHECK(table.row("worse").mark == "-0.150 p<0.001 *");
    CHECK(table.row("BM25 (whitespace)").mark.empty());
    CHECK(format_metric_table(table).find("+0.060 p<0.001 *") != std::string::npos);

    nlohmann::json json = baseline_comparison_to_json(result);
    CHECK(json["baseline"] == "BM25 (whitespace)");
    CHECK(json["metric"] == "recall@1");
    CHECK(json["tests"]["gains"]["significant"] == true);
    CHECK(json["tests"]["trades"]["significant"] == false);
    CHECK(json["tests"]["worse"]["difference"].get<double>() == doctest::Approx(-0.15));
    CHECK(baseline_comparison_note(result).find("seed 13") != std::string::npos);

    CHECK_ERROR_MENTIONS(mark_rows_against_baseline(table, "BM25 (bigrams)", {"gains"}, "recall@1", 0.05, bootstrap),
                         "no row named 'BM25 (bigrams)'");
    CHECK_ERROR_MENTIONS(mark_rows_against_baseline(table, "BM25 (whitespace)", {"gains"}, "mrr@10", 0.05, bootstrap),
                         "no per-query values of mrr@10");
}
