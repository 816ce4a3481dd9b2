// Two charts a run draws as standalone SVG files (no library: plain text, opens in any
// browser):
//
//   training curves   from the trainer's JSON-lines log: the training loss per step (left
//                     panel) and the validation metric at each evaluation (right panel)
//   metric table      grouped bars: one group per metric column, one bar per row of the
//                     table (untrained, BM25, trained, hybrid), values with labels, and on
//                     each bar with an interval an error bar from its low to its high end
//                     (<path class="error-bar">); the legend in a box right of the plot
//                     (<rect class="legend">), sized from the number and the length of the
//                     labels, and the picture made large enough to hold it
//
// Value axes run between round ticks (axis_ticks.h: steps of 1, 2, 2.5 or 5 times a power of
// ten; labels <text class="y-tick">, and "x-tick" for the curves' steps). Both are written
// atomically. Text in the charts is XML-escaped.
#pragma once
#include <string>
#include <vector>

#include "retrieval/report/metric_table.h"

namespace nce::retrieval {

// One series of points (x ascending) with a name for the legend.
struct CurveSeries {
    std::string name;
    std::vector<double> x, y;
};

// The curves of a trainer log: "training loss" (event "step": step, loss) and "validation
// metric" (event "eval": step, metric). Throws naming the file when it is missing or a line
// is not JSON.
std::vector<CurveSeries> read_training_curves(const std::string& log_path);

// An SVG line chart per series, side by side, with axes, ticks and titles.
std::string training_curves_svg(const std::vector<CurveSeries>& series, const std::string& title);
// The grouped-bar SVG of the table.
std::string metric_bars_svg(const MetricTable& table);

// read_training_curves + training_curves_svg, written to svg_path.
void write_training_curves_svg(const std::string& log_path, const std::string& svg_path, const std::string& title);
void write_metric_bars_svg(const MetricTable& table, const std::string& svg_path);

// About how wide `text` is drawn at `font_size` pixels in a sans-serif font: 0.62 em per
// character, a whole em for Hangul, CJK and full-width characters (UTF-8 is decoded), so a box
// sized with it holds the text.
double estimated_text_width(const std::string& text, double font_size);

// "&<>\"'" -> their XML entities.
std::string xml_escape(const std::string& text);

}  // namespace nce::retrieval
