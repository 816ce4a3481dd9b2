// The metric table every app shows: one row per ranker (untrained model, BM25, trained
// model, hybrid), one column per metric, printed on the terminal and written as JSON.
//
//   columns (standard):      recall@1 recall@5 recall@10 mrr@10 ndcg@10
//   columns (with rank@k):   ... rank@1 rank@10   (Rank@k = accuracy@k over the whole corpus)
//
// Each cell is the mean over the test queries with its 95% confidence interval, a percentile
// bootstrap over queries (eval/bootstrap.h: 1,000 resamples from the table's seed, the same
// resampled queries for every row and column):
//
//   ranker                         recall@1                mrr@10
//   trained model      0.579 [0.547, 0.611]  0.709 [0.684, 0.731]
//   value [low, high]: the mean over the queries and its 95% confidence interval (...)
//
// A table may have a mark column (its header `mark_column`), a short note per row after the
// metrics; `nce stackexchange compare` marks there the losses that differ from the best one.
//
// results.json:
//   {"title": ..., "columns": [...],
//    "rows": [{"name": ..., "metrics": {"recall@1": ...}, "low": {"recall@1": ...},
//              "high": {"recall@1": ...}, "mark": ...}],
//    "interval": {"method": ..., "confidence": 0.95, "resamples": 1000, "seed": ...},
//    ...the app's extra facts (data, split sizes, truncation counts, fusion weight, times)}
// "low", "high", "mark" and "interval" are left out when there is none.
#pragma once
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "eval/rankings.h"
#include "eval/bootstrap.h"

namespace nce::retrieval {

struct MetricRow {
    std::string name;                       // "BM25 (whitespace)", "trained model", ...
    std::map<std::string, double> metrics;  // column -> value (the mean over queries)
    // column -> its confidence interval; a column without one prints the value alone.
    std::map<std::string, eval::ConfidenceInterval> intervals;
    // column -> each query's value, in query order (what a paired test compares); kept in
    // memory only, not written to JSON.
    std::map<std::string, std::vector<double>> per_query;
    std::string mark;  // the row's entry in the mark column; may be empty
};

struct MetricTable {
    std::string title;
    std::vector<std::string> columns;
    std::vector<MetricRow> rows;
    std::string mark_column;  // the mark column's header; empty: no mark column
    // How the rows' intervals were made (score_rankings' options), written beside them.
    eval::BootstrapOptions bootstrap;

    // The row called `name`; throws naming it when there is none.
    const MetricRow& row(const std::string& name) const;
};

// "recall@1", "recall@5", "recall@10", "mrr@10", "ndcg@10" (and "rank@1", "rank@10").
std::vector<std::string> standard_columns(bool with_rank_at_k = false);

// Scores `rankings` against `relevant` (eval/metrics.h) for every column in `columns`: the
// mean, each query's value, and the interval of eval::bootstrap_interval with `bootstrap`.
MetricRow score_rankings(const std::string& name, const eval::RankedLists& rankings, const eval::RelevantSets& relevant,
                         const std::vector<std::string>& columns, const eval::BootstrapOptions& bootstrap = {});

// A cell as printed: "0.590 [0.561, 0.619]", or "0.590" without an interval.
std::string format_metric_cell(double value, const eval::ConfidenceInterval* interval);

// The table as aligned text, one line per row, values with three decimals and their
// intervals; each column as wide as its widest cell.
std::string format_metric_table(const MetricTable& table);

// The table as JSON (title, columns, rows); `extra`'s keys are added at the top level.
nlohmann::json metric_table_to_json(const MetricTable& table, const nlohmann::json& extra = nlohmann::json::object());
// Reads what metric_table_to_json wrote (for `eval` reprinting a run's results), intervals
// and marks where present; throws naming `source` on anything missing.
MetricTable metric_table_from_json(const nlohmann::json& json, const std::string& source);

// Writes metric_table_to_json(table, extra) to `path`, atomically.
void write_results_json(const std::string& path, const MetricTable& table,
                        const nlohmann::json& extra = nlohmann::json::object());

}  // namespace nce::retrieval
