// The metric table: scoring rankings into rows, text for the terminal, JSON for results.json.
#include "apps/retrieval/metric_table.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "apps/retrieval/run_config.h"
#include "engine/error.h"

namespace nce::apps::retrieval {
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

MetricRow score_rankings(const std::string& name, const RankedLists& rankings, const eval::RelevantSets& relevant,
                         const std::vector<std::string>& columns) {
    std::vector<int64_t> ks;
    for (const std::string& column : columns) ks.push_back(parse_column(column).second);
    std::sort(ks.begin(), ks.end());
    ks.erase(std::unique(ks.begin(), ks.end()), ks.end());
    std::map<int64_t, eval::MetricsAtK> at = eval::retrieval_metrics(rankings.passages, relevant, ks);
    MetricRow row{name, {}};
    for (const std::string& column : columns) {
        auto [metric, k] = parse_column(column);
        const eval::MetricsAtK& m = at.at(k);
        // Rank@k: the share of queries with a relevant passage in the top k = accuracy@k.
        double value = metric == "recall" ? m.recall : metric == "precision" ? m.precision : metric == "mrr" ? m.mrr
                     : metric == "ndcg" ? m.ndcg : metric == "map" ? m.map : m.accuracy;
        row.metrics[column] = value;
    }
    return row;
}

std::string format_metric_table(const MetricTable& table) {
    size_t name_width = 6;
    for (const MetricRow& row : table.rows) name_width = std::max(name_width, row.name.size());
    std::string text;
    if (!table.title.empty()) text += table.title + "\n";
    text += fmt::format("{:<{}}", "ranker", name_width);
    for (const std::string& column : table.columns) text += fmt::format("  {:>9}", column);
    text += "\n";
    for (const MetricRow& row : table.rows) {
        text += fmt::format("{:<{}}", row.name, name_width);
        for (const std::string& column : table.columns) {
            auto found = row.metrics.find(column);
            text += found == row.metrics.end() ? fmt::format("  {:>9}", "-") : fmt::format("  {:>9.3f}", found->second);
        }
        text += "\n";
    }
    return text;
}

nlohmann::json metric_table_to_json(const MetricTable& table, const nlohmann::json& extra) {
    nlohmann::json json = nlohmann::json::object();
    if (extra.is_object())
        for (const auto& [key, value] : extra.items()) json[key] = value;
    json["title"] = table.title;
    json["columns"] = table.columns;
    json["rows"] = nlohmann::json::array();
    for (const MetricRow& row : table.rows) json["rows"].push_back({{"name", row.name}, {"metrics", row.metrics}});
    return json;
}

MetricTable metric_table_from_json(const nlohmann::json& json, const std::string& source) {
    MetricTable table;
    try {
        table.title = json.at("title").get<std::string>();
        table.columns = json.at("columns").get<std::vector<std::string>>();
        for (const nlohmann::json& row : json.at("rows"))
            table.rows.push_back({row.at("name").get<std::string>(), row.at("metrics").get<std::map<std::string, double>>()});
    } catch (const nlohmann::json::exception& error) {
        fail("{}: not a metric table ({}); it should hold title, columns and rows", source, error.what());
    }
    return table;
}

void write_results_json(const std::string& path, const MetricTable& table, const nlohmann::json& extra) {
    write_text_file_atomically(path, metric_table_to_json(table, extra).dump(2) + "\n");
}

}  // namespace nce::apps::retrieval
