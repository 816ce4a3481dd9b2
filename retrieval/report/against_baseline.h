// Is a model (or the hybrid) above the lexical baseline beyond what the choice of test
// queries explains? Each such row of a run's table against one baseline row, with the paired
// bootstrap of eval/bootstrap.h on one metric.
//
// Intervals that overlap do not say "no difference": two rankers scored on the same queries
// are correlated (most queries are easy for both), so the difference between them varies far
// less than either mean does. The paired test resamples the test queries once per replicate
// and applies the same draw to both rows, which is the spread of the difference itself.
//
// In `nce <app> train` and `eval` the baseline is the BM25 variant the hybrid uses (the one
// best on validation), and the metric the app's tested metric (KorQuAD recall@1, StackExchange
// MRR@10, code rank@1). Each model row and the hybrid get a mark in the table's mark column
// "vs <baseline> <metric>":
//
//   +0.093 p<0.001 *    above the baseline, significant at level alpha (p < alpha)
//   -0.002 p=0.624      no difference the test queries can show
//   -0.079 p=0.004 *    below it beyond the noise
//
// The difference is row minus baseline on the queries as they are; p is two-sided. Each row is
// tested on its own, with no correction for testing several. BM25 rows are left unmarked.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "retrieval/report/metric_table.h"
#include "eval/bootstrap.h"

namespace nce::retrieval {

// The level of every paired test the apps print (`train`/`eval` against BM25, `compare`
// against the best loss): a difference is marked beyond the noise when p < 0.05.
constexpr double kSignificanceLevel = 0.05;

struct RowAgainstBaseline {
    std::string row;
    eval::PairedBootstrapTest test;  // the row minus the baseline, on `metric`
};

struct BaselineComparison {
    std::string metric;    // the column compared, e.g. "recall@1"
    std::string baseline;  // the baseline row's name, e.g. "BM25 (whitespace+bigrams)"
    double alpha = kSignificanceLevel;
    eval::BootstrapOptions bootstrap;
    std::vector<RowAgainstBaseline> rows;  // in the table's row order
};

// The per-query values of `metric` in the row `name` (score_rankings keeps them); throws naming
// the row and the table when there are none.
const std::vector<double>& per_query_values(const MetricTable& table, const std::string& name,
                                            const std::string& metric);

// {"difference", "low", "high", "p_value", "significant"} of one paired test at level alpha.
nlohmann::json paired_test_to_json(const eval::PairedBootstrapTest& test, double alpha);

// p as printed: "p=0.004 *", "p=0.412", and "p<0.001 *" when no replicate flipped the sign
// (printing p = 0 would claim more than `resamples` replicates can show).
std::string significance_mark(const eval::PairedBootstrapTest& test, double alpha, int64_t resamples);

// Tests every row named in `rows` against the row `baseline` on the per-query values of
// `metric` (score_rankings keeps them) and writes the marks and the mark column's header into
// `table`. Throws naming what is missing when a row has no per-query values of `metric`.
BaselineComparison mark_rows_against_baseline(MetricTable& table, const std::string& baseline,
                                              const std::vector<std::string>& rows, const std::string& metric,
                                              double alpha, const eval::BootstrapOptions& bootstrap);

// For results.json: {"metric", "baseline", "alpha", "method", "resamples", "seed",
// "tests": {row: {"difference", "low", "high", "p_value", "significant"}}}.
nlohmann::json baseline_comparison_to_json(const BaselineComparison& comparison);

// The note printed under the table: what the mark column and its `*` mean.
std::string baseline_comparison_note(const BaselineComparison& comparison);

}  // namespace nce::retrieval
