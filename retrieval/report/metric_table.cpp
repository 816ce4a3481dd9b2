// The metric table: scoring rankings into rows with their intervals, text for the terminal,
// JSON for results.json.
#include "retrieval/report/metric_table.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "retrieval/settings/run_config.h"
#include "engine/error.h"

namespace nce::retrieval {
namespace {

// "mrr@10" -> {"mrr", 10}; throws naming the column when it is not of that form.
std::pair<std::string, int64_t> parse_column(const std::string& column) {
    size_t at = column.find('@');
    NCE_CHECK(at != std::string::npos && at > 0 && at + 1 < column.size(),
              "metric table: column '{}' must read metric@k, e.g. mrr@10", column);
    std::string metric = column.substr(0, at);
    int64_t k = 0;
    try {
        k = std::stoll(column.substr(at + 1));
    } catch (const std::logic_error&) {
        fail("metric table: column '{}' must end in a positive number", column);
    }
    static const std::set<std::string> known = {"recall", "accuracy", "precision", "mrr", "ndcg", "map", "rank"};
    NCE_CHECK(known.count(metric) && k > 0, "metric table: unknown column '{}' (metrics: recall, accuracy, precision, "
              "mrr, ndcg, map, rank; k > 0)", column);
    return {metric, k};
}

// One query's value of `metric` (parse_column's name). Rank@k: the share of queries with a
// relevant passage in the top k = accuracy@k.
double metric_of(const eval::MetricsAtK& m, const std::string& metric) {
    return metric == "recall" ? m.recall : metric == "precision" ? m.precision : metric == "mrr" ? m.mrr
         : metric == "ndcg" ? m.ndcg : metric == "map" ? m.map : m.accuracy;
}

}  // namespace

const MetricRow& MetricTable::row(const std::string& name) const {
    for (const MetricRow& candidate : rows)
        if (candidate.name == name) return candidate;
    fail("metric table '{}': no row named '{}'", title, name);
}

std::vector<std::string> standard_columns(bool with_rank_at_k) {
    std::vector<std::string> columns = {"recall@1", "recall@5", "recall@10", "mrr@10", "ndcg@10"};
    if (with_rank_at_k) {
        columns.push_back("rank@1");
        columns.push_back("rank@10");
    }
    return columns;
}

MetricRow score_rankings(const std::string& name, const eval::RankedLists& rankings, const eval::RelevantSets& relevant,
                         const std::vector<std::string>& columns, const eval::BootstrapOptions& bootstrap) {
    std::vector<int64_t> ks;
    for (const std::string& column : columns) ks.push_back(parse_column(column).second);
    std::sort(ks.begin(), ks.end());
    ks.erase(std::unique(ks.begin(), ks.end()), ks.end());
    std::map<int64_t, std::vector<eval::MetricsAtK>> per_query =
        eval::per_query_retrieval_metrics(rankings.passages, relevant, ks);
    MetricRow row{name, {}, {}, {}, {}};
    for (const std::string& column : columns) {
        auto [metric, k] = parse_column(column);
        std::vector<double> values;
        values.reserve(per_query.at(k).size());
        for (const eval::MetricsAtK& m : per_query.at(k)) values.push_back(metric_of(m, metric));
        // The interval's mean is summed in query order like eval::retrieval_metrics, so it is the
        // table's value exactly.
        eval::ConfidenceInterval interval = eval::bootstrap_interval(values, bootstrap);
        row.metrics[column] = interval.mean;
        row.intervals[column] = interval;
        row.per_query[column] = std::move(values);
    }
    return row;
}

std::string format_metric_cell(double value, const eval::ConfidenceInterval* interval) {
    if (!interval) return fmt::format("{:.3f}", value);
    return fmt::format("{:.3f} [{:.3f}, {:.3f}]", value, interval->low, interval->high);
}

std::string format_metric_table(const MetricTable& table) {
    // Every cell first, so each column is as wide as its widest cell and the rows line up.
    std::vector<std::vector<std::string>> cells;
    std::vector<size_t> widths;
    for (const std::string& column : table.columns) widths.push_back(column.size());
    size_t name_width = 6, mark_width = table.mark_column.size();
    for (const MetricRow& row : table.rows) {
        name_width = std::max(name_width, row.name.size());
        mark_width = std::max(mark_width, row.mark.size());
        std::vector<std::string>& line = cells.emplace_back();
        for (size_t c = 0; c < table.columns.size(); ++c) {
            auto found = row.metrics.find(table.columns[c]);
            auto interval = row.intervals.find(table.columns[c]);
            line.push_back(found == row.metrics.end() ? "-"
                           : format_metric_cell(found->second,
                                                interval == row.intervals.end() ? nullptr : &interval->second));
            widths[c] = std::max(widths[c], line.back().size());
        }
    }
    bool with_marks = !table.mark_column.empty();
    std::string text;
    if (!table.title.empty()) text += table.title + "\n";
    text += fmt::format("{:<{}}", "ranker", name_width);
    for (size_t c = 0; c < table.columns.size(); ++c) text += fmt::format("  {:>{}}", table.columns[c], widths[c]);
    if (with_marks) text += fmt::format("  {}", table.mark_column);
    text += "\n";
    for (size_t r = 0; r < table.rows.size(); ++r) {
        text += fmt::format("{:<{}}", table.rows[r].name, name_width);
        for (size_t c = 0; c < table.columns.size(); ++c) text += fmt::format("  {:>{}}", cells[r][c], widths[c]);
        if (with_marks && !table.rows[r].mark.empty()) text += fmt::format("  {}", table.rows[r].mark);
        text += "\n";
    }
    bool with_intervals = std::any_of(table.rows.begin(), table.rows.end(),
                                      [](const MetricRow& row) { return !row.intervals.empty(); });
    if (with_intervals)
        text += fmt::format("value [low, high]: the mean over the queries and its {:g}% confidence interval "
                            "(percentile bootstrap over the queries, {} resamples, seed {})\n",
                            100 * table.bootstrap.confidence, table.bootstrap.resamples, table.bootstrap.seed);
    return text;
}

nlohmann::json metric_table_to_json(const MetricTable& table, const nlohmann::json& extra) {
    nlohmann::json json = nlohmann::json::object();
    if (extra.is_object())
        for (const auto& [key, value] : extra.items()) json[key] = value;
    json["title"] = table.title;
    json["columns"] = table.columns;
    json["rows"] = nlohmann::json::array();
    bool with_intervals = false;
    for (const MetricRow& row : table.rows) {
        nlohmann::json entry = {{"name", row.name}, {"metrics", row.metrics}};
        if (!row.intervals.empty()) {
            with_intervals = true;
            entry["low"] = nlohmann::json::object();
            entry["high"] = nlohmann::json::object();
            for (const auto& [column, interval] : row.intervals) {
                entry["low"][column] = interval.low;
                entry["high"][column] = interval.high;
            }
        }
        if (!row.mark.empty()) entry["mark"] = row.mark;
        json["rows"].push_back(std::move(entry));
    }
    if (with_intervals)
        json["interval"] = {{"method", "percentile bootstrap over queries (the same resampled queries for every row)"},
                            {"confidence", table.bootstrap.confidence},
                            {"resamples", table.bootstrap.resamples},
                            {"seed", table.bootstrap.seed}};
    if (!table.mark_column.empty()) json["mark_column"] = table.mark_column;
    return json;
}

MetricTable metric_table_from_json(const nlohmann::json& json, const std::string& source) {
    MetricTable table;
    try {
        table.title = json.at("title").get<std::string>();
        table.columns = json.at("columns").get<std::vector<std::string>>();
        for (const nlohmann::json& row : json.at("rows")) {
            MetricRow& read = table.rows.emplace_back();
            read.name = row.at("name").get<std::string>();
            read.metrics = row.at("metrics").get<std::map<std::string, double>>();
            // Intervals: only where both ends are there (a results.json from before them has none).
            if (row.contains("low") && row.contains("high"))
                for (const auto& [column, value] : read.metrics)
                    if (row["low"].contains(column) && row["high"].contains(column))
                        read.intervals[column] = {value, row["low"].at(column).get<double>(),
                                                  row["high"].at(column).get<double>()};
            read.mark = row.value("mark", "");
        }
        table.mark_column = json.value("mark_column", "");
        if (json.contains("interval")) {
            const nlohmann::json& interval = json.at("interval");
            table.bootstrap.confidence = interval.at("confidence").get<double>();
            table.bootstrap.resamples = interval.at("resamples").get<int64_t>();
            table.bootstrap.seed = interval.at("seed").get<uint64_t>();
        }
    } catch (const nlohmann::json::exception& error) {
        fail("{}: not a metric table ({}); it should hold title, columns and rows", source, error.what());
    }
    return table;
}

void write_results_json(const std::string& path, const MetricTable& table, const nlohmann::json& extra) {
    write_text_file_atomically(path, metric_table_to_json(table, extra).dump(2) + "\n");
}

}  // namespace nce::retrieval
