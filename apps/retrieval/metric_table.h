// The metric table every app shows: one row per ranker (untrained model, BM25, trained
// model, hybrid), one column per metric, printed on the terminal and written as JSON.
//
//   columns (standard):      recall@1 recall@5 recall@10 mrr@10 ndcg@10
//   columns (with rank@k):   ... rank@1 rank@10   (Rank@k = accuracy@k over the whole corpus)
//
// results.json:
//   {"title": ..., "columns": [...], "rows": [{"name": ..., "metrics": {"recall@1": ...}}],
//    ...the app's extra facts (data, split sizes, truncation counts, fusion weight, times)}
#pragma once
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "apps/retrieval/rankings.h"

namespace nce::apps::retrieval {

struct MetricRow {
    std::string name;                       // "BM25 (whitespace)", "trained model", ...
    std::map<std::string, double> metrics;  // column -> value
};

struct MetricTable {
    std::string title;
    std::vector<std::string> columns;
    std::vector<MetricRow> rows;

    // The row called `name`; throws naming it when there is none.
    const MetricRow& row(const std::string& name) const;
};

// "recall@1", "recall@5", "recall@10", "mrr@10", "ndcg@10" (and "rank@1", "rank@10").
std::vector<std::string> standard_columns(bool with_rank_at_k = false);

// Scores `rankings` against `relevant` (eval/metrics.h) for every column in `columns`.
MetricRow score_rankings(const std::string& name, const RankedLists& rankings, const eval::RelevantSets& relevant,
                         const std::vector<std::string>& columns);

// The table as aligned text, one line per row, values with three decimals.
std::string format_metric_table(const MetricTable& table);

// The table as JSON (title, columns, rows); `extra`'s keys are added at the top level.
nlohmann::json metric_table_to_json(const MetricTable& table, const nlohmann::json& extra = nlohmann::json::object());
// Reads what metric_table_to_json wrote (for `eval` reprinting a run's results); throws
// naming `source` on anything missing.
MetricTable metric_table_from_json(const nlohmann::json& json, const std::string& source);

// Writes metric_table_to_json(table, extra) to `path`, atomically.
void write_results_json(const std::string& path, const MetricTable& table,
                        const nlohmann::json& extra = nlohmann::json::object());

}  // namespace nce::apps::retrieval
