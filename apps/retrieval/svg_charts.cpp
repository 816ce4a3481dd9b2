// Plain-text SVG charts: training curves from the trainer's log, the metric table as bars.
#include "apps/retrieval/svg_charts.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>

#include "apps/retrieval/run_config.h"
#include "engine/error.h"

namespace nce::apps::retrieval {
namespace {

// Colours for series and bars, in order (cycled).
const char* colour(size_t index) {
    static const char* palette[] = {"#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3"};
    return palette[index % (sizeof(palette) / sizeof(palette[0]))];
}

// A short label for a tick value.
std::string tick_label(double value) {
    double magnitude = std::abs(value);
    if (magnitude != 0 && (magnitude >= 1e5 || magnitude < 1e-3)) return fmt::format("{:.1e}", value);
    return fmt::format("{:.4g}", value);
}

// One panel: a line chart of `series` in the box (left, top, width, height).
std::string line_panel(const CurveSeries& series, double left, double top, double width, double height,
                       const char* stroke) {
    std::string svg;
    double plot_left = left + 60, plot_top = top + 30, plot_width = width - 80, plot_height = height - 70;
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"14\" text-anchor=\"middle\">{}</text>\n",
                       left + width / 2, top + 18, xml_escape(series.name));
    svg += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"none\" stroke=\"#999\"/>\n",
                       plot_left, plot_top, plot_width, plot_height);
    if (series.x.empty()) {
        svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"12\" text-anchor=\"middle\">no points</text>\n",
                           plot_left + plot_width / 2, plot_top + plot_height / 2);
        return svg;
    }
    double x_min = *std::min_element(series.x.begin(), series.x.end());
    double x_max = *std::max_element(series.x.begin(), series.x.end());
    double y_min = *std::min_element(series.y.begin(), series.y.end());
    double y_max = *std::max_element(series.y.begin(), series.y.end());
    if (x_max == x_min) x_max = x_min + 1;
    if (y_max == y_min) {
        y_max += 0.5;
        y_min -= 0.5;
    }
    auto px = [&](double x) { return plot_left + (x - x_min) / (x_max - x_min) * plot_width; };
    auto py = [&](double y) { return plot_top + plot_height - (y - y_min) / (y_max - y_min) * plot_height; };
    for (int tick = 0; tick <= 4; ++tick) {
        double y = y_min + (y_max - y_min) * tick / 4.0, x = x_min + (x_max - x_min) * tick / 4.0;
        svg += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#eee\"/>\n", plot_left,
                           py(y), plot_left + plot_width, py(y));
        svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"10\" text-anchor=\"end\">{}</text>\n",
                           plot_left - 4, py(y) + 3, tick_label(y));
        svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"10\" text-anchor=\"middle\">{}</text>\n", px(x),
                           plot_top + plot_height + 14, tick_label(x));
    }
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"11\" text-anchor=\"middle\">step</text>\n",
                       plot_left + plot_width / 2, plot_top + plot_height + 30);
    std::string points;
    for (size_t i = 0; i < series.x.size(); ++i) points += fmt::format("{:.1f},{:.1f} ", px(series.x[i]), py(series.y[i]));
    svg += fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\" points=\"{}\"/>\n", stroke, points);
    if (series.x.size() <= 50)
        for (size_t i = 0; i < series.x.size(); ++i)
            svg += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"2.5\" fill=\"{}\"/>\n", px(series.x[i]),
                               py(series.y[i]), stroke);
    return svg;
}

}  // namespace

std::string xml_escape(const std::string& text) {
    std::string escaped;
    for (char c : text) {
        switch (c) {
            case '&': escaped += "&amp;"; break;
            case '<': escaped += "&lt;"; break;
            case '>': escaped += "&gt;"; break;
            case '"': escaped += "&quot;"; break;
            case '\'': escaped += "&apos;"; break;
            default: escaped += c;
        }
    }
    return escaped;
}

std::vector<CurveSeries> read_training_curves(const std::string& log_path) {
    std::ifstream file(log_path);
    NCE_CHECK(file.good(), "training log {}: cannot open it (train first)", log_path);
    CurveSeries loss{"training loss", {}, {}}, metric{"validation metric (MRR@10)", {}, {}};
    std::string line;
    int64_t line_number = 0;
    while (std::getline(file, line)) {
        ++line_number;
        if (line.empty()) continue;
        nlohmann::json record;
        try {
            record = nlohmann::json::parse(line);
        } catch (const nlohmann::json::exception&) {
            fail("training log {}: line {} is not JSON", log_path, line_number);
        }
        std::string event = record.value("event", "");
        if (event == "step" && record.contains("loss") && record["loss"].is_number()) {
            loss.x.push_back(record.at("step").get<double>());
            loss.y.push_back(record["loss"].get<double>());
        } else if (event == "eval" && record.contains("metric") && record["metric"].is_number()) {
            metric.x.push_back(record.at("step").get<double>());
            metric.y.push_back(record["metric"].get<double>());
        }
    }
    return {loss, metric};
}

std::string training_curves_svg(const std::vector<CurveSeries>& series, const std::string& title) {
    const double panel_width = 420, panel_height = 300;
    double width = panel_width * static_cast<double>(std::max<size_t>(1, series.size())), height = panel_height + 40;
    std::string svg = fmt::format(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0f}\" height=\"{:.0f}\" font-family=\"sans-serif\">\n"
        "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
        "<text x=\"{:.1f}\" y=\"22\" font-size=\"16\" text-anchor=\"middle\">{}</text>\n",
        width, height, width / 2, xml_escape(title));
    for (size_t i = 0; i < series.size(); ++i)
        svg += line_panel(series[i], panel_width * static_cast<double>(i), 40, panel_width, panel_height, colour(i));
    return svg + "</svg>\n";
}

std::string metric_bars_svg(const MetricTable& table) {
    const double group_width = 40.0 + 18.0 * static_cast<double>(table.rows.size());
    const double plot_left = 50, plot_top = 50, plot_height = 260;
    double plot_width = group_width * static_cast<double>(std::max<size_t>(1, table.columns.size()));
    double legend_width = 260;
    double width = plot_left + plot_width + legend_width, height = plot_top + plot_height + 50;
    std::string svg = fmt::format(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0f}\" height=\"{:.0f}\" font-family=\"sans-serif\">\n"
        "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
        "<text x=\"{:.1f}\" y=\"24\" font-size=\"16\" text-anchor=\"middle\">{}</text>\n",
        width, height, (plot_left + plot_width) / 2, xml_escape(table.title));
    auto py = [&](double value) { return plot_top + plot_height - std::clamp(value, 0.0, 1.0) * plot_height; };
    for (int tick = 0; tick <= 5; ++tick) {
        double value = tick / 5.0;
        svg += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#eee\"/>\n", plot_left,
                           py(value), plot_left + plot_width, py(value));
        svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"10\" text-anchor=\"end\">{:.1f}</text>\n",
                           plot_left - 4, py(value) + 3, value);
    }
    for (size_t c = 0; c < table.columns.size(); ++c) {
        double group_left = plot_left + group_width * static_cast<double>(c) + 20;
        for (size_t r = 0; r < table.rows.size(); ++r) {
            auto found = table.rows[r].metrics.find(table.columns[c]);
            if (found == table.rows[r].metrics.end()) continue;
            double x = group_left + 18.0 * static_cast<double>(r), y = py(found->second);
            svg += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"16\" height=\"{:.1f}\" fill=\"{}\">"
                               "<title>{}: {:.3f}</title></rect>\n",
                               x, y, plot_top + plot_height - y, colour(r), xml_escape(table.rows[r].name), found->second);
            svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"8\" text-anchor=\"middle\">{:.2f}</text>\n",
                               x + 8, y - 3, found->second);
        }
        svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"12\" text-anchor=\"middle\">{}</text>\n",
                           group_left + 9.0 * static_cast<double>(table.rows.size()), plot_top + plot_height + 18,
                           xml_escape(table.columns[c]));
    }
    for (size_t r = 0; r < table.rows.size(); ++r) {
        double y = plot_top + 20.0 * static_cast<double>(r);
        svg += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"12\" height=\"12\" fill=\"{}\"/>\n",
                           plot_left + plot_width + 20, y, colour(r));
        svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"12\">{}</text>\n", plot_left + plot_width + 38,
                           y + 10, xml_escape(table.rows[r].name));
    }
    return svg + "</svg>\n";
}

void write_training_curves_svg(const std::string& log_path, const std::string& svg_path, const std::string& title) {
    write_text_file_atomically(svg_path, training_curves_svg(read_training_curves(log_path), title));
}

void write_metric_bars_svg(const MetricTable& table, const std::string& svg_path) {
    write_text_file_atomically(svg_path, metric_bars_svg(table));
}

}  // namespace nce::apps::retrieval
