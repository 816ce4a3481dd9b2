// Rows of a run's table against the lexical baseline: the paired bootstrap and the marks.
#include "retrieval/report/against_baseline.h"

#include <fmt/format.h>

#include <algorithm>

#include "engine/error.h"

namespace nce::retrieval {

const std::vector<double>& per_query_values(const MetricTable& table, const std::string& name,
                                            const std::string& metric) {
    const MetricRow& row = table.row(name);
    auto found = row.per_query.find(metric);
    NCE_CHECK(found != row.per_query.end() && !found->second.empty(),
              "paired test: the row '{}' of '{}' has no per-query values of {}; score it with score_rankings", name,
              table.title, metric);
    return found->second;
}

nlohmann::json paired_test_to_json(const eval::PairedBootstrapTest& test, double alpha) {
    return {{"difference", test.difference},
            {"low", test.low},
            {"high", test.high},
            {"p_value", test.p_value},
            {"significant", test.significant(alpha)}};
}

std::string significance_mark(const eval::PairedBootstrapTest& test, double alpha, int64_t resamples) {
    const char* star = test.significant(alpha) ? " *" : "";
    if (test.p_value == 0) return fmt::format("p<{:g}{}", 1.0 / static_cast<double>(resamples), star);
    return fmt::format("p={:.3f}{}", test.p_value, star);
}

BaselineComparison mark_rows_against_baseline(MetricTable& table, const std::string& baseline,
                                              const std::vector<std::string>& rows, const std::string& metric,
                                              double alpha, const eval::BootstrapOptions& bootstrap) {
    BaselineComparison comparison{metric, baseline, alpha, bootstrap, {}};
    const std::vector<double>& baseline_values = per_query_values(table, baseline, metric);
    table.mark_column = fmt::format("vs {} {}", baseline, metric);
    for (MetricRow& row : table.rows) {
        if (std::find(rows.begin(), rows.end(), row.name) == rows.end()) continue;
        eval::PairedBootstrapTest test =
            eval::paired_bootstrap_test(per_query_values(table, row.name, metric), baseline_values, bootstrap);
        row.mark = fmt::format("{:+.3f} {}", test.difference, significance_mark(test, alpha, bootstrap.resamples));
        comparison.rows.push_back({row.name, test});
    }
    return comparison;
}

nlohmann::json baseline_comparison_to_json(const BaselineComparison& comparison) {
    nlohmann::json rows = nlohmann::json::object();
    for (const RowAgainstBaseline& entry : comparison.rows) rows[entry.row] = paired_test_to_json(entry.test, comparison.alpha);
    return {{"metric", comparison.metric},
            {"baseline", comparison.baseline},
            {"alpha", comparison.alpha},
            {"method", "paired bootstrap over test queries, the same resampled queries for the row and the baseline; "
                       "p two-sided = min(1, 2 * share of replicates where (row - baseline) does not keep its sign); "
                       "difference = row - baseline; no correction for testing several rows"},
            {"resamples", comparison.bootstrap.resamples},
            {"seed", comparison.bootstrap.seed},
            {"tests", rows}};
}

std::string baseline_comparison_note(const BaselineComparison& comparison) {
    return fmt::format(
        "vs {0} {1}: each row minus {0} on {1}, paired bootstrap over the test queries ({2} resamples, seed {3}), "
        "two-sided p; * = beyond the noise (p < {4:g}), each row tested on its own\n",
        comparison.baseline, comparison.metric, comparison.bootstrap.resamples, comparison.bootstrap.seed,
        comparison.alpha);
}

}  // namespace nce::retrieval
