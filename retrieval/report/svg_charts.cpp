// Plain-text SVG charts: training curves from the trainer's log, the metric table as bars with
// error bars, both on round axis ticks.
#include "retrieval/report/svg_charts.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>

#include "retrieval/report/axis_ticks.h"
#include "retrieval/settings/run_config.h"
#include "engine/error.h"

namespace nce::retrieval {
namespace {

// Colours for series and bars, in order (cycled).
const char* colour(size_t index) {
    // Ten, so a comparison's ten rows (untrained, BM25, seven losses, hybrid) get ten colours.
    static const char* palette[] = {"#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3",
                                    "#937860", "#da8bc3", "#8c8c8c", "#ccb974", "#64b5cd"};
    return palette[index % (sizeof(palette) / sizeof(palette[0]))];
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
    // Both axes run from one round tick to another (axis_ticks.h), covering every point.
    AxisTicks x_ticks = round_ticks(*std::min_element(series.x.begin(), series.x.end()),
                                    *std::max_element(series.x.begin(), series.x.end()), 4);
    AxisTicks y_ticks = round_ticks(*std::min_element(series.y.begin(), series.y.end()),
                                    *std::max_element(series.y.begin(), series.y.end()), 4);
    double x_min = x_ticks.first(), x_max = x_ticks.last(), y_min = y_ticks.first(), y_max = y_ticks.last();
    auto px = [&](double x) { return plot_left + (x - x_min) / (x_max - x_min) * plot_width; };
    auto py = [&](double y) { return plot_top + plot_height - (y - y_min) / (y_max - y_min) * plot_height; };
    for (double y : y_ticks.values) {
        svg += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#eee\"/>\n", plot_left,
                           py(y), plot_left + plot_width, py(y));
        svg += fmt::format("<text class=\"y-tick\" x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"10\" text-anchor=\"end\">{}</text>\n",
                           plot_left - 4, py(y) + 3, y_ticks.label(y));
    }
    for (double x : x_ticks.values)
        svg += fmt::format("<text class=\"x-tick\" x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"10\" text-anchor=\"middle\">{}</text>\n",
                           px(x), plot_top + plot_height + 14, x_ticks.label(x));
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

double estimated_text_width(const std::string& text, double font_size) {
    double ems = 0;
    for (size_t i = 0; i < text.size();) {
        unsigned char lead = static_cast<unsigned char>(text[i]);
        size_t length = lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
        char32_t point = lead < 0x80 ? lead : lead < 0xE0 ? lead & 0x1F : lead < 0xF0 ? lead & 0x0F : lead & 0x07;
        for (size_t j = 1; j < length && i + j < text.size(); ++j)
            point = (point << 6) | (static_cast<unsigned char>(text[i + j]) & 0x3F);
        i += length;
        // Hangul, CJK and full-width forms take a whole em; Latin text in a sans-serif font
        // averages about half an em, so 0.62 errs on the wide side for capitals and digits.
        bool wide = (point >= 0x1100 && point <= 0x115F) || (point >= 0x2E80 && point <= 0xA4CF) ||
                    (point >= 0xAC00 && point <= 0xD7A3) || (point >= 0xF900 && point <= 0xFAFF) ||
                    (point >= 0xFF00 && point <= 0xFF60);
        ems += wide ? 1.0 : 0.62;
    }
    return ems * font_size;
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
    // A bar's value label ("0.36" at 8 px) is about 20 px wide: the pitch keeps neighbours apart.
    const double bar_width = 18, bar_pitch = 22;
    const double group_width = 40.0 + bar_pitch * static_cast<double>(table.rows.size());
    const double plot_left = 50, plot_top = 50, plot_height = 260;
    double plot_width = group_width * static_cast<double>(std::max<size_t>(1, table.columns.size()));

    // The value axis: round ticks from 0 up past the highest bar or interval end.
    double top = 0;
    for (const MetricRow& row : table.rows)
        for (const std::string& column : table.columns) {
            auto found = row.metrics.find(column);
            if (found != row.metrics.end() && std::isfinite(found->second)) top = std::max(top, found->second);
            auto interval = row.intervals.find(column);
            if (interval != row.intervals.end() && std::isfinite(interval->second.high))
                top = std::max(top, interval->second.high);
        }
    AxisTicks ticks = round_ticks(0, top > 0 ? top : 1, 5);
    const double axis_top = ticks.last();
    auto py = [&](double value) {
        return plot_top + plot_height - std::clamp(value, 0.0, axis_top) / axis_top * plot_height;
    };

    // The legend's box, from the number of rows and the widest label: right of the plot.
    const double legend_font = 12, legend_pitch = 20, legend_padding = 8, swatch = 12, swatch_gap = 6;
    double widest_label = 0;
    for (const MetricRow& row : table.rows)
        widest_label = std::max(widest_label, estimated_text_width(row.name, legend_font));
    const double legend_left = plot_left + plot_width + 20, legend_top = plot_top;
    const double legend_width = 2 * legend_padding + swatch + swatch_gap + widest_label;
    const double legend_height =
        table.rows.empty() ? 0 : 2 * legend_padding + legend_pitch * static_cast<double>(table.rows.size() - 1) + swatch;

    // The picture holds the plot, its labels, the legend and the title.
    const double title_font = 16;
    double width = std::max(legend_left + legend_width + 10, estimated_text_width(table.title, title_font) + 20);
    double height = std::max(plot_top + plot_height + 50, legend_top + legend_height + 10);
    std::string svg = fmt::format(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0f}\" height=\"{:.0f}\" font-family=\"sans-serif\">\n"
        "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
        "<text x=\"{:.1f}\" y=\"24\" font-size=\"{:.0f}\" text-anchor=\"middle\">{}</text>\n",
        std::ceil(width), std::ceil(height), width / 2, title_font, xml_escape(table.title));
    for (double value : ticks.values) {
        svg += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#eee\"/>\n", plot_left,
                           py(value), plot_left + plot_width, py(value));
        svg += fmt::format("<text class=\"y-tick\" x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"10\" text-anchor=\"end\">{}</text>\n",
                           plot_left - 4, py(value) + 3, ticks.label(value));
    }
    for (size_t c = 0; c < table.columns.size(); ++c) {
        double group_left = plot_left + group_width * static_cast<double>(c) + 20;
        for (size_t r = 0; r < table.rows.size(); ++r) {
            const MetricRow& row = table.rows[r];
            auto found = row.metrics.find(table.columns[c]);
            if (found == row.metrics.end()) continue;
            auto interval = row.intervals.find(table.columns[c]);
            const eval::ConfidenceInterval* bounds = interval == row.intervals.end() ? nullptr : &interval->second;
            double x = group_left + bar_pitch * static_cast<double>(r), y = py(found->second);
            svg += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.0f}\" height=\"{:.1f}\" fill=\"{}\">"
                               "<title>{}: {}</title></rect>\n",
                               x, y, bar_width, plot_top + plot_height - y, colour(r), xml_escape(row.name),
                               format_metric_cell(found->second, bounds));
            double label_y = y;
            if (bounds) {
                // The error bar: a vertical line from low to high with a short cap at each end.
                double centre = x + bar_width / 2, low = py(bounds->low), high = py(bounds->high);
                svg += fmt::format("<path class=\"error-bar\" d=\"M{0:.1f},{1:.1f}V{2:.1f}"
                                   "M{3:.1f},{1:.1f}h6M{3:.1f},{2:.1f}h6\" stroke=\"#222\" stroke-width=\"1\" "
                                   "fill=\"none\"/>\n",
                                   centre, low, high, centre - 3);
                label_y = std::min(y, high);
            }
            svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"8\" text-anchor=\"middle\">{:.2f}</text>\n",
                               x + bar_width / 2, label_y - 3, found->second);
        }
        svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"12\" text-anchor=\"middle\">{}</text>\n",
                           group_left + bar_pitch / 2 * static_cast<double>(table.rows.size()),
                           plot_top + plot_height + 18, xml_escape(table.columns[c]));
    }
    if (!table.rows.empty())
        svg += fmt::format("<rect class=\"legend\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" "
                           "fill=\"white\" stroke=\"#ccc\"/>\n",
                           legend_left, legend_top, legend_width, legend_height);
    for (size_t r = 0; r < table.rows.size(); ++r) {
        double y = legend_top + legend_padding + legend_pitch * static_cast<double>(r);
        svg += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.0f}\" height=\"{:.0f}\" fill=\"{}\"/>\n",
                           legend_left + legend_padding, y, swatch, swatch, colour(r));
        svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"{:.0f}\">{}</text>\n",
                           legend_left + legend_padding + swatch + swatch_gap, y + 10, legend_font,
                           xml_escape(table.rows[r].name));
    }
    if (std::any_of(table.rows.begin(), table.rows.end(), [](const MetricRow& row) { return !row.intervals.empty(); }))
        svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"10\" fill=\"#555\">error bars: {:g}% "
                           "bootstrap interval over queries</text>\n",
                           plot_left, plot_top + plot_height + 38, 100 * table.bootstrap.confidence);
    return svg + "</svg>\n";
}

void write_training_curves_svg(const std::string& log_path, const std::string& svg_path, const std::string& title) {
    write_text_file_atomically(svg_path, training_curves_svg(read_training_curves(log_path), title));
}

void write_metric_bars_svg(const MetricTable& table, const std::string& svg_path) {
    write_text_file_atomically(svg_path, metric_bars_svg(table));
}

}  // namespace nce::retrieval
