// The retrieval apps' shared parts (retrieval/) and the KorQuAD generator
// (retrieval/korquad/): lexical tokens, the hybrid fusion and its weight, the metric table with its
// intervals, the SVG charts (error bars, legend, round ticks), the run configuration, and
// generated data that the real reader accepts.
#include <limits>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <iterator>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>
#include <fstream>
#include <set>
#include <sstream>

#include "retrieval/korquad/korquad_generator.h"
#include "retrieval/report/axis_ticks.h"
#include "retrieval/report/metric_table.h"
#include "retrieval/index/passage_index.h"
#include "retrieval/train/pretraining.h"
#include "retrieval/train/training_windows.h"
#include "retrieval/train/bm25_negatives.h"
#include "eval/rankings.h"
#include "retrieval/embedding/run_device.h"
#include "retrieval/settings/run_config.h"
#include "retrieval/run/run_preparation.h"
#include "retrieval/run/retrieval_app.h"
#include "retrieval/report/svg_charts.h"
#include "retrieval/model/text_model.h"
#include "data/korquad_reader.h"
#include "nn/checkpoint.h"
#include "tests/test_helpers.h"

namespace fs = std::filesystem;
using namespace nce;
using namespace nce::retrieval;

TEST_CASE("lexical tokens: whitespace words without edge punctuation, and bigrams inside words") {
    CHECK(eval::lexical_tokens("서울의 날씨는?", eval::LexicalTokens::Whitespace) == std::vector<std::string>{"서울의", "날씨는"});
    CHECK(eval::lexical_tokens("서울의 날씨는?", eval::LexicalTokens::WhitespaceAndBigrams) ==
          std::vector<std::string>{"서울의", "서울", "울의", "날씨는", "날씨", "씨는"});
    CHECK(eval::lexical_tokens("  \"Hello,\"  World! ", eval::LexicalTokens::Whitespace) == std::vector<std::string>{"hello", "world"});
    CHECK(eval::lexical_tokens("... ?", eval::LexicalTokens::Whitespace).empty());
    CHECK(eval::lexical_tokens("a", eval::LexicalTokens::WhitespaceAndBigrams) == std::vector<std::string>{"a"});
}

TEST_CASE("bm25 rankings: the passage sharing the query's word under another particle needs bigrams") {
    std::vector<std::string> passages = {"한솔시는 1923년에 세워졌다", "다른 도시의 이야기", "한솔시의 강"};
    std::vector<std::string> queries = {"한솔시가 만들어진 해는?"};
    eval::RankedLists words = eval::bm25_rankings(queries, passages, eval::LexicalTokens::Whitespace, {1.5, 0.75}, 3);
    eval::RankedLists bigrams = eval::bm25_rankings(queries, passages, eval::LexicalTokens::WhitespaceAndBigrams, {1.5, 0.75}, 3);
    CHECK(words.scores[0][0] == 0.0);  // no whole word in common
    CHECK(bigrams.scores[0][0] > 0.0);
    CHECK((bigrams.passages[0][0] == 0 || bigrams.passages[0][0] == 2));
}

TEST_CASE("fusion: a convex combination of min-max normalised scores, missing entries count 0") {
    eval::RankedLists lexical{{{0, 1, 2}}, {{10.0, 5.0, 0.0}}};  // norm: 1, 0.5, 0
    eval::RankedLists dense{{{2, 1, 3}}, {{0.9, 0.5, 0.1}}};     // norm: 1, 0.5, 0
    eval::RankedLists fused = eval::fuse_rankings(lexical, dense, 0.25);
    // 0: 0.75·1 = 0.75   1: 0.75·0.5 + 0.25·0.5 = 0.5   2: 0.75·0 + 0.25·1 = 0.25   3: 0
    REQUIRE(fused.passages[0] == std::vector<int64_t>{0, 1, 2});
    CHECK(fused.scores[0][0] == doctest::Approx(0.75));
    CHECK(fused.scores[0][1] == doctest::Approx(0.5));
    CHECK(fused.scores[0][2] == doctest::Approx(0.25));
    CHECK(eval::fuse_rankings(lexical, dense, 0.0).passages[0].front() == 0);
    CHECK(eval::fuse_rankings(lexical, dense, 1.0).passages[0].front() == 2);
    CHECK_ERROR_MENTIONS(eval::fuse_rankings(lexical, dense, 1.5), "dense weight");
}

TEST_CASE("fusion weight: chosen on validation, the smallest weight reaching the best MRR@10") {
    // Query 0: BM25 is right (passage 0); query 1: the model is right (passage 5).
    // Query 0 needs w < 0.976, query 1 needs w > 0.036 (solve fused scores for the winner).
    eval::RankedLists lexical{{{0, 1, 2}, {4, 5, 6}}, {{2.0, 1.0, 0.0}, {3.0, 2.9, 0.0}}};
    eval::RankedLists dense{{{1, 0, 2}, {5, 4, 6}}, {{0.8, 0.79, 0.0}, {0.9, 0.1, 0.0}}};
    eval::RelevantSets relevant = {{0}, {5}};
    eval::FusionChoice choice = eval::choose_fusion_weight(lexical, dense, relevant);
    CHECK(choice.validation_mrr == doctest::Approx(1.0));
    eval::RankedLists fused = eval::fuse_rankings(lexical, dense, choice.dense_weight);
    CHECK(fused.passages[0].front() == 0);
    CHECK(fused.passages[1].front() == 5);
    CHECK(choice.dense_weight == doctest::Approx(0.05));  // the smallest weight on the grid that works
}

TEST_CASE("metric table: rows scored from rankings, printed, and written as JSON that reads back") {
    eval::RankedLists rankings{{{3, 1, 2}, {0, 2, 1}}, {{3, 2, 1}, {3, 2, 1}}};
    eval::RelevantSets relevant = {{1}, {0}};
    MetricRow row = score_rankings("model", rankings, relevant, standard_columns(true));
    CHECK(row.metrics.at("recall@1") == doctest::Approx(0.5));
    CHECK(row.metrics.at("recall@5") == doctest::Approx(1.0));
    CHECK(row.metrics.at("mrr@10") == doctest::Approx(0.75));
    CHECK(row.metrics.at("rank@1") == doctest::Approx(0.5));
    CHECK(row.metrics.at("ndcg@10") == doctest::Approx((1.0 / std::log2(3.0) + 1.0) / 2));
    MetricTable table{"title <&>", standard_columns(), {row, {"BM25 (whitespace)", row.metrics}}};
    std::string text = format_metric_table(table);
    CHECK(text.find("BM25 (whitespace)") != std::string::npos);
    CHECK(text.find("0.750") != std::string::npos);
    MetricTable back = metric_table_from_json(metric_table_to_json(table, {{"seconds", 1.5}}), "test");
    CHECK(back.rows.size() == 2);
    CHECK(back.rows[1].metrics.at("mrr@10") == doctest::Approx(0.75));
    CHECK_ERROR_MENTIONS(score_rankings("x", rankings, relevant, {"mrr10"}), "metric@k");
}

namespace {

// A generated KorQuAD set of `articles` towns (five paragraphs each), written into `folder`
// (created) and read back.
data::RetrievalDataset generated_korquad_in(const fs::path& folder, int64_t articles, uint64_t seed) {
    korquad::KorquadGeneratorOptions options;
    options.articles = articles;
    options.seed = seed;
    fs::create_directories(folder);
    korquad::write_generated_korquad((folder / "korquad.json").string(), options);
    return data::read_korquad((folder / "korquad.json").string(), data::Leniency::Strict);
}

// A generated KorQuAD set of `articles` towns and a 300-piece tokenizer trained on its passages.
struct GeneratedSet {
    data::RetrievalDataset dataset;
    data::Tokenizer tokenizer;
};

GeneratedSet generated_set_with_tokenizer(const std::string& name, int64_t articles, uint64_t seed) {
    fs::path folder = fs::temp_directory_path() / fmt::format("nce_test_{}_{}", name, getpid());
    data::RetrievalDataset dataset = generated_korquad_in(folder, articles, seed);
    std::vector<std::string> corpus;
    for (const data::Passage& passage : dataset.passages) corpus.push_back(passage.text);
    data::TokenizerOptions options;
    options.vocab_size = 300;
    options.seed = 1;
    data::Tokenizer tokenizer = data::Tokenizer::train(corpus, options, folder.string());
    fs::remove_all(folder);
    return {std::move(dataset), std::move(tokenizer)};
}

// 40 queries over 4 passages, query q's answer passage q % 4; the ranking puts it first for
// three queries in four and second otherwise: recall@1 = 0.75, MRR@10 = 0.875.

eval::RankedLists three_in_four_first(eval::RelevantSets& relevant) {
    eval::RankedLists rankings;
    for (int64_t q = 0; q < 40; ++q) {
        int64_t answer = q % 4, other = (answer + 1) % 4;
        rankings.passages.push_back(q % 4 == 3 ? std::vector<int64_t>{other, answer}
                                               : std::vector<int64_t>{answer, other});
        rankings.scores.push_back({2.0, 1.0});
        relevant.push_back({answer});
    }
    return rankings;
}

}  // namespace

TEST_CASE("metric table: each cell prints its interval, the columns stay aligned, the JSON carries low and high") {
    eval::RelevantSets relevant;
    eval::RankedLists rankings = three_in_four_first(relevant);
    eval::BootstrapOptions bootstrap{1000, 7, 0.95};
    MetricRow row = score_rankings("trained model", rankings, relevant, standard_columns(), bootstrap);
    CHECK(row.metrics.at("recall@1") == doctest::Approx(0.75));
    CHECK(row.metrics.at("mrr@10") == doctest::Approx(0.875));
    REQUIRE(row.intervals.count("recall@1") == 1);
    const eval::ConfidenceInterval& recall = row.intervals.at("recall@1");
    CHECK(recall.mean == row.metrics.at("recall@1"));
    CHECK(recall.low < 0.75);
    CHECK(recall.high > 0.75);
    CHECK(row.per_query.at("recall@1").size() == 40);
    // recall@5 is 1 for every query: an interval of zero width.
    CHECK(row.intervals.at("recall@5").low == 1.0);
    CHECK(row.intervals.at("recall@5").high == 1.0);
    // The same seed, the same interval.
    MetricRow again = score_rankings("trained model", rankings, relevant, standard_columns(), bootstrap);
    CHECK(again.intervals.at("mrr@10").low == row.intervals.at("mrr@10").low);
    CHECK(again.intervals.at("mrr@10").high == row.intervals.at("mrr@10").high);

    MetricRow short_name = score_rankings("BM25", rankings, relevant, standard_columns(), bootstrap);
    MetricTable table{"t", standard_columns(), {row, short_name}, "", bootstrap};
    std::string text = format_metric_table(table);
    std::string expected_cell = fmt::format("0.750 [{:.3f}, {:.3f}]", recall.low, recall.high);
    CHECK(text.find("trained model  " + expected_cell) != std::string::npos);
    CHECK(text.find("1.000 [1.000, 1.000]") != std::string::npos);
    CHECK(text.find("its 95% confidence interval (percentile bootstrap over the queries, 1000 resamples, seed 7)") !=
          std::string::npos);
    // Header and rows are equally long, and every column header ends where its cells end.
    std::vector<std::string> lines;
    std::istringstream stream(text);
    for (std::string line; std::getline(stream, line);) lines.push_back(line);
    REQUIRE(lines.size() == 5);  // title, header, two rows, the note on the intervals
    CHECK(lines[2].size() == lines[1].size());
    CHECK(lines[3].size() == lines[1].size());
    for (const std::string& column : standard_columns()) {
        size_t end = lines[1].find(column) + column.size();
        CHECK(lines[2][end - 1] == ']');
        CHECK(lines[3][end - 1] == ']');
        CHECK(lines[2].substr(end - 20, 20).find('[') == 6);  // "0.750 [0.600, 0.875]": 20 wide
    }

    nlohmann::json json = metric_table_to_json(table, {{"seconds", 1.5}});
    CHECK(json["rows"][0]["metrics"]["recall@1"] == 0.75);  // the existing key, unchanged
    CHECK(json["rows"][0]["low"]["recall@1"].get<double>() == recall.low);
    CHECK(json["rows"][0]["high"]["recall@1"].get<double>() == recall.high);
    CHECK(json["interval"]["resamples"] == 1000);
    CHECK(json["interval"]["seed"] == 7);
    MetricTable back = metric_table_from_json(json, "test");
    CHECK(back.rows[0].intervals.at("mrr@10").low == row.intervals.at("mrr@10").low);
    CHECK(format_metric_table(back) == text);
    // A results.json from before the intervals still reads, and prints values alone.
    nlohmann::json old = json;
    old.erase("interval");
    for (auto& entry : old["rows"]) entry.erase("low"), entry.erase("high");
    MetricTable plain = metric_table_from_json(old, "old");
    CHECK(plain.rows[0].intervals.empty());
    CHECK(format_metric_table(plain).find('[') == std::string::npos);
    CHECK(format_metric_table(plain).find("0.750") != std::string::npos);
}

TEST_CASE("round ticks: steps of 1, 2, 2.5 or 5 times a power of ten, covering the range") {
    AxisTicks unit = round_ticks(0, 0.93, 5);
    CHECK(unit.step == doctest::Approx(0.2));
    REQUIRE(unit.values.size() == 6);
    CHECK(unit.last() == doctest::Approx(1.0));
    CHECK(unit.label(unit.values[3]) == "0.6");
    AxisTicks halves = round_ticks(1.2, 3.4, 5);
    CHECK(halves.step == doctest::Approx(0.5));
    CHECK(halves.first() == doctest::Approx(1.0));
    CHECK(halves.last() == doctest::Approx(3.5));
    CHECK(halves.label(2.5) == "2.5");
    AxisTicks steps = round_ticks(0, 250, 5);
    CHECK(steps.step == doctest::Approx(50));
    CHECK(steps.label(steps.values[2]) == "100");
    AxisTicks quarters = round_ticks(0, 1.1, 5);
    CHECK(quarters.step == doctest::Approx(0.25));
    CHECK(quarters.label(quarters.values[1]) == "0.25");
    CHECK(round_ticks(0, 1, 5).values.size() == 6);  // 1.0 is a tick already: no 1.2
    CHECK(round_ticks(3, 3, 4).values.size() >= 2);  // an empty range is widened
    for (double low : {0.0, -3.7, 0.0012, 17.0})
        for (double span : {0.003, 0.9, 7.0, 1234.0}) {
            AxisTicks ticks = round_ticks(low, low + span, 5);
            CHECK(is_round_step(ticks.step));
            CHECK(ticks.first() <= low);
            CHECK(ticks.last() >= low + span);
            CHECK(ticks.values.size() <= 12);
        }
    CHECK(is_round_step(0.025));
    CHECK(is_round_step(500));
    CHECK_FALSE(is_round_step(0.3));
    CHECK_FALSE(is_round_step(0.186));
}

TEST_CASE("svg charts: bars per row and column, curves from a trainer log, text escaped") {
    MetricTable table{"a <b> & c", {"recall@1", "mrr@10"},
                      {{"untrained", {{"recall@1", 0.1}, {"mrr@10", 0.2}}}, {"trained \"x\"", {{"recall@1", 0.8}, {"mrr@10", 0.9}}}}};
    std::string svg = metric_bars_svg(table);
    CHECK(svg.rfind("<svg", 0) == 0);
    CHECK(svg.find("</svg>") != std::string::npos);
    CHECK(svg.find("a &lt;b&gt; &amp; c") != std::string::npos);
    CHECK(svg.find("trained &quot;x&quot;") != std::string::npos);
    size_t bars = 0;
    for (size_t at = svg.find("<title>"); at != std::string::npos; at = svg.find("<title>", at + 1)) ++bars;
    CHECK(bars == 4);

    fs::path log = fs::temp_directory_path() / "nce_test_retrieval_log.jsonl";
    {
        std::ofstream file(log);
        file << R"({"event":"step","step":1,"loss":2.0})" << "\n"
             << R"({"event":"step","step":2,"loss":1.5})" << "\n"
             << R"({"event":"eval","step":2,"metric":0.4})" << "\n";
    }
    std::vector<CurveSeries> curves = read_training_curves(log.string());
    REQUIRE(curves.size() == 2);
    CHECK(curves[0].y == std::vector<double>{2.0, 1.5});
    CHECK(curves[1].x == std::vector<double>{2.0});
    CHECK(training_curves_svg(curves, "t").find("polyline") != std::string::npos);
    {
        std::ofstream file(log);
        file << "not json\n";
    }
    CHECK_ERROR_MENTIONS(read_training_curves(log.string()), "line 1 is not JSON");
    fs::remove(log);
}

namespace {

// The number in attribute `name` of the first element of `svg` that starts with `element`.
double svg_attribute(const std::string& svg, const std::string& element, const std::string& name) {
    size_t at = svg.find(element);
    REQUIRE(at != std::string::npos);
    size_t attribute = svg.find(" " + name + "=\"", at);
    REQUIRE(attribute < svg.find('>', at));
    return std::stod(svg.substr(attribute + name.size() + 3));
}

// The text of every <text class="y-tick"> in `svg`, as numbers.
std::vector<double> y_tick_values(const std::string& svg) {
    std::vector<double> values;
    for (size_t at = svg.find("class=\"y-tick\""); at != std::string::npos; at = svg.find("class=\"y-tick\"", at + 1))
        values.push_back(std::stod(svg.substr(svg.find('>', at) + 1)));
    return values;
}

size_t count_of(const std::string& text, const std::string& what) {
    size_t count = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++count;
    return count;
}

// Ticks a reader trusts: evenly spaced by a round step, each a whole multiple of it.
void check_round_ticks(const std::vector<double>& ticks) {
    REQUIRE(ticks.size() >= 2);
    double step = ticks[1] - ticks[0];
    CHECK(is_round_step(std::stod(fmt::format("{:.6g}", step))));
    for (size_t i = 0; i < ticks.size(); ++i) {
        CHECK(ticks[i] - ticks[0] == doctest::Approx(step * static_cast<double>(i)));
        double multiple = ticks[i] / step;
        CHECK(multiple == doctest::Approx(std::round(multiple)));
    }
}

}  // namespace

TEST_CASE("svg bars: an error bar per bar with an interval, the legend inside the picture, round ticks") {
    eval::RelevantSets relevant;
    eval::RankedLists rankings = three_in_four_first(relevant);
    std::vector<std::string> columns = {"recall@1", "mrr@10", "ndcg@10"};
    MetricTable table{"nce korquad: test split", columns, {}, "", {1000, 3, 0.95}};
    for (const char* name : {"untrained model", "BM25 (whitespace)", "BM25 (whitespace+bigrams)",
                             "hybrid (BM25 whitespace+bigrams + trained model) with a long name",
                             "한국어 이름이 아주 긴 순위기 (legend labels in Hangul are wide)"})
        table.rows.push_back(score_rankings(name, rankings, relevant, columns, table.bootstrap));
    std::string svg = metric_bars_svg(table);
    CHECK(count_of(svg, "<title>") == 15);
    CHECK(count_of(svg, "class=\"error-bar\"") == 15);
    // The error bar of the first bar (recall@1 of the first row) spans its interval on the axis.
    const eval::ConfidenceInterval& first = table.rows[0].intervals.at("recall@1");
    CHECK(first.low < first.high);

    double width = svg_attribute(svg, "<svg", "width"), height = svg_attribute(svg, "<svg", "height");
    double legend_x = svg_attribute(svg, "<rect class=\"legend\"", "x");
    double legend_y = svg_attribute(svg, "<rect class=\"legend\"", "y");
    double legend_width = svg_attribute(svg, "<rect class=\"legend\"", "width");
    double legend_height = svg_attribute(svg, "<rect class=\"legend\"", "height");
    CHECK(legend_x >= 0);
    CHECK(legend_y >= 0);
    CHECK(legend_x + legend_width <= width);
    CHECK(legend_y + legend_height <= height);
    // The box holds its longest label (the Hangul one, about an em per syllable) and every row.
    CHECK(legend_width >= estimated_text_width(table.rows[4].name, 12));
    CHECK(estimated_text_width("한국어", 12) == doctest::Approx(36));
    CHECK(legend_height >= 20.0 * 4 + 12);
    check_round_ticks(y_tick_values(svg));
    CHECK(y_tick_values(svg).back() >= 1.0);  // recall@5-like cells reach 1: the axis covers them

    // Many rows: the legend grows down and the picture with it.
    MetricTable tall = table;
    for (int i = 0; i < 20; ++i) tall.rows.push_back(table.rows[0]);
    std::string tall_svg = metric_bars_svg(tall);
    double tall_bottom = svg_attribute(tall_svg, "<rect class=\"legend\"", "y") +
                         svg_attribute(tall_svg, "<rect class=\"legend\"", "height");
    CHECK(tall_bottom <= svg_attribute(tall_svg, "<svg", "height"));

    // Small values: the axis stops at a round number just above the highest interval end.
    MetricTable small{"small", {"mrr@10"}, {{"a", {{"mrr@10", 0.031}}, {{"mrr@10", {0.031, 0.012, 0.064}}}}}, "", {}};
    std::vector<double> small_ticks = y_tick_values(metric_bars_svg(small));
    check_round_ticks(small_ticks);
    CHECK(small_ticks.back() >= 0.064);
    CHECK(small_ticks.back() < 0.1);
    // A table without intervals draws no error bar.
    MetricTable plain{"plain", {"mrr@10"}, {{"a", {{"mrr@10", 0.5}}}}};
    CHECK(count_of(metric_bars_svg(plain), "error-bar") == 0);
}

TEST_CASE("svg curves: round ticks on both axes") {
    CurveSeries loss{"training loss", {1, 2, 3, 137}, {3.71, 2.2, 1.9, 0.43}};
    std::string svg = training_curves_svg({loss}, "t");
    check_round_ticks(y_tick_values(svg));
    std::vector<double> x_ticks;
    for (size_t at = svg.find("class=\"x-tick\""); at != std::string::npos; at = svg.find("class=\"x-tick\"", at + 1))
        x_ticks.push_back(std::stod(svg.substr(svg.find('>', at) + 1)));
    check_round_ticks(x_ticks);
    CHECK(x_ticks.front() <= 1);
    CHECK(x_ticks.back() >= 137);
}

TEST_CASE("run config: the lexical head by name; lexical_dim alone is read as it was before lexical_head") {
    RunConfig config;
    config.lexical_head = LexicalHead::TermWeights;  // an app's default
    apply_run_config_json(config, {{"lexical_head", "both"}, {"lexical_dim", 512}}, "run.json");
    CHECK(config.lexical_head == LexicalHead::Both);
    CHECK(lexical_width(config) == 512);
    CHECK(has_term_weights(config));
    CHECK(run_config_to_json(config).at("lexical_head") == "both");
    // An earlier run's config.json (lexical_dim -3, -2, -1, N, 0 and no lexical_head).
    const std::vector<std::tuple<int64_t, LexicalHead, int64_t>> earlier = {
        {-3, LexicalHead::Both, 6 * 128}, {-2, LexicalHead::TermWeights, 0}, {-1, LexicalHead::MaxPooled, 6 * 128},
        {300, LexicalHead::MaxPooled, 300}, {0, LexicalHead::None, 0}};
    for (const auto& [old, head, width] : earlier) {
        RunConfig read;
        read.lexical_head = LexicalHead::TermWeights;
        apply_run_config_json(read, {{"lexical_dim", old}}, "config.json");
        CAPTURE(old);
        CHECK(read.lexical_head == head);
        CHECK(lexical_width(read) == width);
        CHECK(read.lexical_dim >= 0);
    }
    CHECK_ERROR_MENTIONS(apply_run_config_json(config, {{"lexical_head", "sparse"}}, "run.json"),
                         "lexical_head must be none, max_pooled, term_weights or both");
    RunConfig negative;
    apply_run_config_json(negative, {{"lexical_head", "max_pooled"}, {"lexical_dim", -2}}, "run.json");
    CHECK_ERROR_MENTIONS(validate_run_config(negative), "lexical_dim, the max-pooled lexical vector's width");
}

TEST_CASE("run config: file keys and flags override defaults; unknown keys and bad values are one line") {
    RunConfig config;
    apply_run_config_json(config, {{"batch_size", 16}, {"loss", "triplet"}, {"loss_parameters", {{"margin", 0.2}}}},
                          "run.json");
    CHECK(config.batch_size == 16);
    CHECK(config.loss == "triplet");
    CHECK(config.loss_parameters.at("margin") == "0.2");
    CHECK(config.seed == RunConfig{}.seed);
    CHECK_ERROR_MENTIONS(apply_run_config_json(config, {{"batch_sise", 16}}, "run.json"), "unknown setting 'batch_sise'");
    CHECK_ERROR_MENTIONS(apply_run_config_json(config, {{"batch_size", "many"}}, "run.json"), "must be an integer");
    RunConfig bad;
    bad.validation_fraction = 0.6;
    bad.test_fraction = 0.5;
    CHECK_ERROR_MENTIONS(validate_run_config(bad), "below 1");
    bad = RunConfig{};
    bad.loss_parameters["temperature"] = "1";
    CHECK_ERROR_MENTIONS(validate_run_config(bad), "no parameter 'temperature'");

    CLI::App app;
    RunConfigOptions options;
    RunConfig defaults;
    defaults.output = "runs/test";
    options.add_to(app, defaults);
    std::vector<std::string> args = {"--loss-parameter", "tau=0.2", "--max-steps", "7", "--warmup-steps", "2", "--seed", "3"};
    std::reverse(args.begin(), args.end());
    app.parse(args);
    RunConfig resolved = options.resolve();
    CHECK(resolved.max_steps == 7);
    CHECK(resolved.seed == 3);
    CHECK(resolved.output == "runs/test");
    CHECK(resolved.loss_parameters.at("tau") == "0.2");
    CHECK(options.given("seed"));
    CHECK_FALSE(options.given("batch_size"));

    // A warmup left unset follows a short step budget (a tenth of it); a warmup set stays.
    CLI::App short_run;
    RunConfigOptions short_options;
    short_options.add_to(short_run, defaults);  // warmup_steps 30
    short_run.parse(std::vector<std::string>{"20", "--max-steps"});
    CHECK(short_options.resolve().warmup_steps == 2);
    CLI::App long_run;
    RunConfigOptions long_options;
    long_options.add_to(long_run, defaults);
    long_run.parse(std::vector<std::string>{"1000", "--max-steps"});
    CHECK(long_options.resolve().warmup_steps == 30);  // the default, below a tenth
    CHECK(resolved.warmup_steps == 2);  // set above: kept
    CHECK(resolved.chosen == std::set<std::string>{"loss_parameters", "max_steps", "warmup_steps", "seed"});
}

TEST_CASE("fine-tuning defaults replace the settings the user did not choose, even one given at its default value") {
    RetrievalApp app;
    app.defaults.learning_rate = 1e-3;
    app.defaults.batch_size = 64;
    app.fine_tuning = {"infonce", 32};
    ModelSource no_init("");  // the dropout is chosen: no folder is read
    RunConfig config = app.defaults;
    config.loss = "infonce_symmetric";
    // The user gave --learning-rate 1e-3 (the from-scratch value), --loss infonce_symmetric and
    // --dropout: those stay; the rest take fine-tuning's.
    config.chosen = {"learning_rate", "loss", "dropout"};
    use_fine_tuning_defaults(config, no_init, app, 100);
    CHECK(config.learning_rate == 1e-3);
    CHECK(config.loss == "infonce_symmetric");
    CHECK(config.batch_size == 32);
    CHECK(config.max_steps == 4);  // one epoch of 100 questions in batches of 32
    CHECK(config.warmup_steps == 1);

    RunConfig unchosen = app.defaults;
    unchosen.chosen = {"dropout"};
    use_fine_tuning_defaults(unchosen, no_init, app, 100);
    CHECK(unchosen.learning_rate == kFineTuningLearningRate);
    CHECK(unchosen.loss == "infonce");
}

TEST_CASE("--max-steps bounds corpus pretraining when the user chose it, even at its default value") {
    RunConfig config;
    config.max_steps = 500;
    CHECK(pretraining_step_limit(config) == std::numeric_limits<int64_t>::max());  // not chosen: no bound
    config.chosen = {"max_steps"};
    CHECK(pretraining_step_limit(config) == 500);
}

TEST_CASE("fine-tuning defaults: an app's passage length shortens the sized one, unless the user chose one") {
    RetrievalApp app;
    app.fine_tuning = {"infonce", 32, 48};
    ModelSource no_init("");  // the dropout is chosen: no folder is read
    RunConfig sized = app.defaults;
    sized.max_passage_length = 128;  // as sized to the data
    sized.chosen = {"dropout"};      // (else the dropout is read from the --init folder)
    use_fine_tuning_defaults(sized, no_init, app, 100);
    CHECK(sized.max_passage_length == 48);

    RunConfig short_model = app.defaults;
    short_model.max_passage_length = 32;  // a model whose max_seq_length is 32: never lengthened
    short_model.chosen = {"dropout"};
    use_fine_tuning_defaults(short_model, no_init, app, 100);
    CHECK(short_model.max_passage_length == 32);

    RunConfig chosen = app.defaults;
    chosen.max_passage_length = 128;
    chosen.chosen = {"max_passage_length", "dropout"};
    use_fine_tuning_defaults(chosen, no_init, app, 100);
    CHECK(chosen.max_passage_length == 128);
}

TEST_CASE("korquad generator: the same seed gives the same file, which the KorQuAD reader accepts") {
    korquad::KorquadGeneratorOptions options;
    options.articles = 20;
    options.seed = 4;
    std::string text = korquad::generate_korquad_json(options);
    CHECK(text == korquad::generate_korquad_json(options));
    options.seed = 5;
    CHECK(text != korquad::generate_korquad_json(options));

    fs::path path = fs::temp_directory_path() / "nce_test_generated_korquad.json";
    options.seed = 4;
    int64_t questions = korquad::write_generated_korquad(path.string(), options);
    data::RetrievalDataset dataset = data::read_korquad(path.string(), data::Leniency::Strict);  // checks every answer
    fs::remove(path);
    CHECK(dataset.report.records.at("articles") == 20);
    CHECK(dataset.passages.size() == 100);  // five aspects per town
    CHECK(static_cast<int64_t>(dataset.queries.size()) == questions);
    CHECK(questions >= 20 * 5 * 3);

    // Paraphrased: a question shares few whitespace words with its paragraph (the town's name
    // carries another particle), but many character bigrams.
    double shared_words = 0, shared_bigrams = 0;
    for (const data::Relevance& relevance : dataset.relevance) {
        const std::string& question = dataset.queries[static_cast<size_t>(relevance.query)].text;
        const std::string& paragraph = dataset.passages[static_cast<size_t>(relevance.passage)].text;
        auto share = [&](eval::LexicalTokens tokens) {
            std::vector<std::string> asked = eval::lexical_tokens(question, tokens);
            std::vector<std::string> told = eval::lexical_tokens(paragraph, tokens);
            std::set<std::string> known(told.begin(), told.end());
            double hits = 0;
            for (const std::string& token : asked) hits += known.count(token) ? 1 : 0;
            return hits / static_cast<double>(asked.size());
        };
        shared_words += share(eval::LexicalTokens::Whitespace);
        shared_bigrams += share(eval::LexicalTokens::WhitespaceAndBigrams);
    }
    shared_words /= static_cast<double>(dataset.relevance.size());
    shared_bigrams /= static_cast<double>(dataset.relevance.size());
    CHECK(shared_words < 0.35);
    CHECK(shared_bigrams > shared_words + 0.1);
}

TEST_CASE("passage index: index.json or a chunks.jsonl line nested 100,000 deep is one error naming the file") {
    struct RemovedAtEnd {
        fs::path path;
        ~RemovedAtEnd() {
            std::error_code ignored;
            fs::remove_all(path, ignored);
        }
    } scratch{fs::temp_directory_path() / ("nce_test_deep_index_" + std::to_string(::getpid()))};
    const fs::path& folder = scratch.path;
    fs::remove_all(folder);
    fs::create_directories(folder);
    auto write = [&](const char* name, const std::string& text) { std::ofstream(folder / name) << text; };
    const std::string deep = std::string(100'000, '[') + std::string(100'000, ']');
    const std::string index_dir = folder.string();

    write("index.json", deep + "\n");
    CHECK_ERROR_MENTIONS(search_passage_index(index_dir, "a question", 3),
                         "--index " + index_dir + ": index.json: JSON nesting exceeds 64 levels at byte 64");

    // chunks.jsonl is read after the tokenizer and the model are loaded: a real, tiny pair.
    write("index.json", R"({"max_query_length": 8, "max_passage_length": 8})");
    std::vector<std::string> texts;
    for (const char* first : {"the river", "a quiet town", "the old bridge", "every market"})
        for (const char* second : {"opens early", "sits by the hills", "was rebuilt", "draws visitors"})
            texts.push_back(std::string(first) + " " + second);
    data::TokenizerOptions tokenizer_options;
    tokenizer_options.vocab_size = 30;
    data::Tokenizer tokenizer = data::Tokenizer::train(texts, tokenizer_options, index_dir);
    RunConfig config;
    config.d_model = 8;
    config.nhead = 2;
    config.dim_feedforward = 16;
    config.num_layers = 1;
    config.max_query_length = config.max_passage_length = 8;
    nn::save_model((folder / "model.safetensors").string(), *make_text_encoder(config, tokenizer.vocab_size()));
    write("chunks.jsonl", R"({"passage_id": "p1", "group": "g1", "text": "the river opens early"})" "\n" + deep + "\n");
    CHECK_ERROR_MENTIONS(search_passage_index(index_dir, "a question", 3),
                         "--index " + index_dir + ": chunks.jsonl line 2: JSON nesting exceeds 64 levels at byte 64");
}

namespace {

// A small word-level tokenizer over `texts`, in its own folder (removed at the end).
struct SmallTokenizer {
    fs::path folder;
    data::Tokenizer tokenizer;
    explicit SmallTokenizer(const std::vector<std::string>& texts, const std::string& name)
        : folder(fs::temp_directory_path() / fmt::format("nce_test_{}_{}", name, getpid())),
          tokenizer(train_small(texts, folder)) {}
    ~SmallTokenizer() { fs::remove_all(folder); }
    static data::Tokenizer train_small(const std::vector<std::string>& texts, const fs::path& folder) {
        fs::remove_all(folder);
        data::TokenizerOptions options;
        options.vocab_size = 28;
        options.character_coverage = 1.0;
        return data::Tokenizer::train(texts, options, folder.string());
    }
};

// "w0 w1 w2 ... w{n-1}": n distinct words, each a handful of pieces.
std::string numbered_words(int count, const std::string& prefix) {
    std::string text;
    for (int i = 0; i < count; ++i) text += (i ? " " : "") + prefix + std::to_string(i);
    return text;
}

}  // namespace

TEST_CASE("training windows: the positive is the window holding the answer; others by shared words") {
    std::string long_text = numbered_words(120, "river");  // many windows of 16 tokens
    std::string short_text = "hills";
    SmallTokenizer small({long_text, short_text, "where is river97", "hills and rivers"}, "windows");
    data::RetrievalDataset train;
    train.passages = {{"long", long_text, "g"}, {"short", short_text, "g"}};
    train.queries = {{"q0", "where is river97", "g"}, {"q1", "what about hills", "g"},
                     {"q2", "river3 river4", "g"}, {"q3", "river111 river112", "g"}};
    // q0's answer "river97" by its bytes; q2 and q3 have no answer position (word rule).
    int64_t answer = static_cast<int64_t>(long_text.find("river97 "));
    train.relevance = {{0, 0, 1.0, 0, false, answer, answer + 7},
                       {1, 1, 1.0, 0, false, 0, 1},
                       {2, 0, 1.0, 0, false, -1, -1},
                       {3, 0, 1.0, 0, false, -1, -1}};
    TrainingWindows windows = training_windows(train, small.tokenizer, 16, 4);
    REQUIRE(windows.dataset.relevance.size() == 4);
    CHECK(windows.positives == 4);
    CHECK(windows.passages_split == 1);
    CHECK(windows.placed_by_answer == 1);  // the short passage is one window: nothing to place
    CHECK(windows.placed_by_words == 2);
    CHECK(windows.moved == 2);             // q0 and q3; q2's words are in the first window
    auto text_of = [&](size_t relevance) {
        return windows.dataset.passages[static_cast<size_t>(windows.dataset.relevance[relevance].passage)].text;
    };
    CHECK(text_of(0).find("river97") != std::string::npos);
    CHECK(text_of(0).find("river0 ") == std::string::npos);
    CHECK(text_of(1) == short_text);
    CHECK(text_of(2).rfind("river0 ", 0) == 0);  // the first window
    CHECK(text_of(3).find("river111") != std::string::npos);
    // The answer's bytes now count within the window's text.
    const data::Relevance& moved = windows.dataset.relevance[0];
    CHECK(text_of(0).substr(static_cast<size_t>(moved.answer_begin), 7) == "river97");
    // Every window is the passage's own text, and each chosen window appears once.
    for (const data::Passage& passage : windows.dataset.passages)
        CHECK((long_text.find(passage.text) != std::string::npos || passage.text == short_text));
    std::set<std::string> distinct;
    for (const data::Passage& passage : windows.dataset.passages) distinct.insert(passage.text);
    CHECK(distinct.size() == windows.dataset.passages.size());
}

TEST_CASE("bm25 negatives: the best-ranked passages sharing a word, never an answer or its text, after the answers") {
    data::RetrievalDataset train;
    train.passages = {{"p0", "seoul river bridge", "a"},     // q0's answer
                      {"p1", "seoul river park", "a"},       // shares two words with q0
                      {"p2", "seoul tower", "a"},            // shares one
                      {"p3", "seoul river bridge", "b"},     // the answer's text again: never a negative
                      {"p4", "busan harbour", "b"}};         // shares none with q0
    train.queries = {{"q0", "seoul river", "a"}, {"q1", "busan harbour", "b"}};
    train.relevance = {{0, 0, 1.0, 0, false, -1, -1}, {1, 4, 1.0, 0, false, -1, -1}};
    const eval::Bm25Parameters bm25{1.2, 0.75};

    data::RetrievalDataset none = train;
    CHECK(add_bm25_negatives(none, 0, eval::LexicalTokens::Whitespace, bm25).negatives == 0);
    CHECK(none.relevance.size() == 2);

    MinedNegatives mined = add_bm25_negatives(train, 2, eval::LexicalTokens::Whitespace, bm25);
    CHECK(mined.questions == 2);
    // q0: p1 (two shared words), then p2; q1 shares a word with no other passage.
    CHECK(mined.negatives == 2);
    CHECK(mined.short_rankings == 1);
    REQUIRE(train.relevance.size() == 4);
    for (size_t i = 2; i < 4; ++i) {
        CHECK(train.relevance[i].query == 0);
        CHECK(train.relevance[i].hard_negative);
        CHECK(train.relevance[i].rank == static_cast<int64_t>(i) - 1);  // after the one answer
    }
    CHECK(train.relevance[2].passage == 1);
    CHECK(train.relevance[3].passage == 2);
    // Evaluation never counts them relevant.
    eval::RelevantSets relevant = eval::relevant_sets(train);
    CHECK(relevant[0] == std::vector<int64_t>{0});
}

TEST_CASE("passage chunks with a pretrained tokenizer: windows of the text's own pieces, [CLS] and [SEP] fit around each") {
    // A WordPiece tokenizer whose words "a" .. "j" are one piece each.
    testing::TemporaryDirectory folder;
    nlohmann::json vocab = {{"[PAD]", 0}, {"[UNK]", 1}, {"[CLS]", 2}, {"[SEP]", 3}, {"query", 4}, {":", 5}};
    const std::string words = "abcdefghij";
    for (char word : words) vocab[std::string(1, word)] = static_cast<int64_t>(vocab.size());
    nlohmann::json file = {
        {"version", "1.0"}, {"truncation", nullptr}, {"padding", nullptr},
        {"added_tokens", {{{"id", 2}, {"content", "[CLS]"}, {"special", true}}, {{"id", 3}, {"content", "[SEP]"}, {"special", true}}}},
        {"normalizer", {{"type", "BertNormalizer"}, {"clean_text", true}, {"handle_chinese_chars", true},
                        {"strip_accents", nullptr}, {"lowercase", true}}},
        {"pre_tokenizer", {{"type", "BertPreTokenizer"}}},
        {"post_processor", {{"type", "BertProcessing"}, {"sep", {"[SEP]", 3}}, {"cls", {"[CLS]", 2}}}},
        {"decoder", {{"type", "WordPiece"}, {"prefix", "##"}, {"cleanup", true}}},
        {"model", {{"type", "WordPiece"}, {"unk_token", "[UNK]"}, {"continuing_subword_prefix", "##"},
                   {"max_input_chars_per_word", 100}, {"vocab", vocab}}}};
    std::ofstream(folder.path / "tokenizer.json") << file.dump();
    data::Tokenizer tokenizer = data::Tokenizer::load(folder.path.string());
    REQUIRE(tokenizer.special_tokens().before == 1);
    REQUIRE(tokenizer.special_tokens().after == 1);
    CHECK(prompt_tokens(tokenizer, "query:") == 2);  // "query" ":", not [CLS] and [SEP]

    // 10 pieces, 6 tokens a row: [CLS] + 4 pieces + [SEP]; windows of 4 overlapping by 2.
    const std::string text = "a b c d e f g h i j";
    const int64_t window = passage_window(tokenizer, "", 6, 2);
    CHECK(window == 4);
    std::vector<PassageChunk> chunks = chunk_passages({{"p", text, "g"}}, tokenizer, window, 2);
    std::vector<std::string> texts;
    for (const PassageChunk& chunk : chunks) texts.push_back(chunk.text);
    CHECK(texts == std::vector<std::string>{"a b c d", "c d e f", "e f g h", "g h i j"});  // the last word kept
    for (const std::string& chunk : texts) {  // each window, read at 6 tokens, loses nothing
        data::EncodedBatch batch = tokenizer.encode({chunk}, 6);
        CHECK(batch.ids.size(1) == 6);
        CHECK(tokenizer.encode_ids(chunk).size() == 6);
    }
    // With a prompt of 2 pieces the window shrinks by 2.
    CHECK(passage_window(tokenizer, "query:", 8, 2) == 4);
    CHECK_ERROR_MENTIONS(passage_window(tokenizer, "query:", 6, 2), "the special tokens take 4 of the 6");
}

TEST_CASE("pseudo-queries: 3 to 12 words of one sentence of the window, the same for the same seed") {
    std::string window = "The old bridge was rebuilt in 1931 after the flood. Markets open early on Sundays!\n"
                         "short line\nThe river runs past the hills and the quiet town every spring.";
    std::set<std::string> seen;
    for (uint64_t seed = 0; seed < 200; ++seed) {
        Generator first(seed), second(seed);
        std::string query = draw_pseudo_query(window, first);
        CHECK(query == draw_pseudo_query(window, second));
        std::istringstream words(query);
        std::vector<std::string> parts{std::istream_iterator<std::string>(words), std::istream_iterator<std::string>()};
        CHECK(parts.size() >= 3);
        CHECK(parts.size() <= 12);
        // All words from one sentence, in order.
        bool in_one = false;
        for (const std::string sentence : {"The old bridge was rebuilt in 1931 after the flood.",
                                           "Markets open early on Sundays!",
                                           "The river runs past the hills and the quiet town every spring."}) {
            size_t at = 0;
            bool all = true;
            for (const std::string& part : parts) {
                at = sentence.find(part, at);
                if (at == std::string::npos) { all = false; break; }
                at += part.size();
            }
            in_one = in_one || all;
        }
        CHECK_MESSAGE(in_one, query);
        CHECK(query.find("short line") == std::string::npos);  // a 2-word line is never drawn
        seen.insert(query);
    }
    CHECK(seen.size() > 50);  // varied
    Generator generator(1);
    CHECK(draw_pseudo_query("   ", generator).empty());
    CHECK(draw_pseudo_query("two words", generator) == "two words");
}

TEST_CASE("pretraining: imitating BM25 on the corpus alone lifts a fresh model's retrieval of real questions") {
    // 16 generated towns (80 paragraphs, about 400 questions); the questions are never read
    // by pretraining, only used to score it afterwards.
    fs::path folder = fs::temp_directory_path() / fmt::format("nce_test_pretraining_{}", getpid());
    data::RetrievalDataset dataset = generated_korquad_in(folder, 16, 3);
    std::vector<std::string> texts, questions, paragraphs;
    for (const data::Passage& passage : dataset.passages) texts.push_back(passage.text), paragraphs.push_back(passage.text);
    for (const data::Query& query : dataset.queries) questions.push_back(query.text);
    data::TokenizerOptions tokenizer_options;
    tokenizer_options.vocab_size = 400;
    tokenizer_options.seed = 1;
    data::Tokenizer tokenizer = data::Tokenizer::train(texts, tokenizer_options, folder.string());

    RunConfig config;
    config.d_model = 32;
    config.nhead = 2;
    config.num_layers = 1;
    config.dim_feedforward = 64;
    config.max_query_length = 24;
    config.max_passage_length = 48;
    config.pretrain_steps = 300;
    config.pretrain_batch_size = 16;
    config.learning_rate = 3e-3;
    config.seed = 2;
    auto mrr_of = [&](nn::EmbeddingModel& model) {
        Tensor q = encode_texts(model, tokenizer, questions, config.max_query_length, 64);
        Tensor p = encode_texts(model, tokenizer, paragraphs, config.max_passage_length, 64);
        return eval::retrieval_metrics(eval::passage_lists(eval::dense_rankings(q, p, 10)), eval::relevant_sets(dataset), {10}).at(10).mrr;
    };
    std::unique_ptr<nn::EmbeddingModel> fresh = make_text_encoder(config, tokenizer.vocab_size());
    double before = mrr_of(*fresh);
    PretrainingReport report = pretrain_text_encoder(*fresh, tokenizer, dataset.passages,
                                                     eval::LexicalTokens::WhitespaceAndBigrams, 8, config, "");
    double after = mrr_of(*fresh);
    fs::remove_all(folder);
    MESSAGE("MRR@10 of the generated questions over 80 paragraphs: fresh ", before, ", pretrained ", after,
            "; pseudo-query top-1: BM25 ", report.teacher_top1, ", model ", report.model_top1);
    CHECK(report.steps == 300);
    CHECK(report.model_top1 > 0.2);  // the model learnt to find a pseudo-query's window
    CHECK(after > before + 0.015);   // and some of it carries over to questions it never saw
}

TEST_CASE("encode_texts: batches of like length, rows in the texts' order, each as the text encoded alone") {
    auto [dataset, tokenizer] = generated_set_with_tokenizer("encode_order", 4, 5);
    std::vector<std::string> texts;
    // Short questions and long paragraphs interleaved, so that an unsorted batch would mix lengths.
    for (size_t i = 0; i < 6; ++i) {
        texts.push_back(dataset.queries[i].text);
        texts.push_back(dataset.passages[i % dataset.passages.size()].text);
    }
    RunConfig config;
    config.d_model = 16;
    config.nhead = 2;
    config.num_layers = 1;
    config.dim_feedforward = 32;
    config.max_passage_length = 40;
    config.seed = 3;
    std::unique_ptr<nn::EmbeddingModel> model = make_text_encoder(config, tokenizer.vocab_size());
    Tensor batched = encode_texts(*model, tokenizer, texts, config.max_passage_length, 4);  // [12, 16]
    REQUIRE(batched.size(0) == static_cast<int64_t>(texts.size()));
    for (size_t i = 0; i < texts.size(); ++i) {
        Tensor alone = encode_texts(*model, tokenizer, {texts[i]}, config.max_passage_length, 1);  // [1, 16]
        std::vector<double> a = alone.to_vector(), b = batched.rows(static_cast<int64_t>(i), static_cast<int64_t>(i) + 1).to_vector();
        double largest = 0;
        for (size_t j = 0; j < a.size(); ++j) largest = std::max(largest, std::abs(a[j] - b[j]));
        CAPTURE(i);
        CHECK(largest < 1e-5);
    }
}

TEST_CASE("chunk_passages: a passage of 600 KB is tokenized in blocks and cut into the whole text's windows") {
    auto [dataset, tokenizer] = generated_set_with_tokenizer("long_chunks", 4, 7);
    std::string text;
    for (size_t i = 0; text.size() < 600000; ++i)
        text += dataset.passages[i % dataset.passages.size()].text + (i % 3 == 0 ? "\n  getLineNumberFromTheTable " : " counterValue ");
    const int64_t window = 50, overlap = 10;
    std::vector<PassageChunk> chunks = chunk_passages({{"long", text, "g"}}, tokenizer, window, overlap);
    // The windows of the text tokenized at once, as chunk_passages cuts them.
    data::Tokenizer::PiecesWithOffsets whole = tokenizer.encode_with_offsets(text);
    const int64_t total = static_cast<int64_t>(whole.ids.size());
    std::vector<std::pair<int64_t, int64_t>> expected;
    for (int64_t start = 0;; start += window - overlap) {
        int64_t end = std::min(total, start + window);
        expected.emplace_back(whole.begin[static_cast<size_t>(start)], whole.end[static_cast<size_t>(end - 1)]);
        if (end == total) break;
    }
    REQUIRE(chunks.size() == expected.size());
    for (size_t c = 0; c < chunks.size(); ++c) {
        CAPTURE(c);
        CHECK(chunks[c].begin == expected[c].first);
        CHECK(chunks[c].end == expected[c].second);
    }
}

TEST_CASE("encoding a large batch in groups of similar length: the rows and gradients of one padded pass") {
    // 45 rows of 1 to 45 tokens in a shuffled order, so the 32-row groups hold rows from all
    // over the batch and the second group is padded to a longer row than the first.
    RunConfig config;
    config.d_model = 16;
    config.nhead = 2;
    config.num_layers = 1;
    config.dim_feedforward = 32;
    config.max_passage_length = 48;
    config.seed = 5;
    const int64_t vocabulary = 50, rows = 45, width = 45;
    Generator generator(config.seed);
    std::unique_ptr<nn::EmbeddingModel> model =
        nn::make_model(text_encoder_config(config, vocabulary), generator, Dtype::Float64);
    model->train(false);
    std::vector<int64_t> lengths(rows);
    std::iota(lengths.begin(), lengths.end(), int64_t{1});
    std::mt19937_64 shuffle_rng(11);
    std::shuffle(lengths.begin(), lengths.end(), shuffle_rng);
    std::vector<int64_t> ids(rows * width, 0), mask(rows * width, 0);
    for (int64_t row = 0; row < rows; ++row)
        for (int64_t t = 0; t < lengths[row]; ++t) {
            ids[row * width + t] = 1 + (row * 7 + t * 3) % (vocabulary - 1);
            mask[row * width + t] = 1;
        }
    data::EncodedBatch batch{Tensor::from_indices(ids, {rows, width}), Tensor::from_indices(mask, {rows, width})};

    // The same loss, sum over rows and columns of embedding * W with W random, through the
    // grouped encoding and through one pass over the whole padded batch.
    Var grouped = encode_on_model_device(*model, batch, nullptr);  // [45, D']
    REQUIRE(grouped.value().size(0) == rows);
    Tensor w = generator.normal(grouped.value().shape(), Dtype::Float64);
    auto gradients_of = [&](const Var& embeddings) {
        model->zero_grad();
        sum(embeddings * Var(w)).backward();
        std::vector<double> all;
        for (Var* parameter : model->parameters())
            if (parameter->grad().defined())
                for (double value : parameter->grad().to_vector()) all.push_back(value);
        return all;
    };
    std::vector<double> grouped_gradients = gradients_of(grouped);
    Var whole = model->encode(batch.ids, batch.mask, nullptr);  // [45, D'], padded to 45 tokens

    std::vector<double> got = grouped.value().to_vector(), expected = whole.value().to_vector();
    REQUIRE(got.size() == expected.size());
    double largest_difference = 0;
    for (size_t i = 0; i < got.size(); ++i) largest_difference = std::max(largest_difference, std::abs(got[i] - expected[i]));
    CHECK(largest_difference < 1e-12);

    std::vector<double> whole_gradients = gradients_of(whole);
    REQUIRE(grouped_gradients.size() == whole_gradients.size());
    double largest_gradient = 0, largest_gradient_difference = 0;
    for (size_t i = 0; i < whole_gradients.size(); ++i) {
        largest_gradient = std::max(largest_gradient, std::abs(whole_gradients[i]));
        largest_gradient_difference = std::max(largest_gradient_difference, std::abs(grouped_gradients[i] - whole_gradients[i]));
    }
    CHECK(largest_gradient > 1e-3);
    CHECK(largest_gradient_difference < 1e-10);
}
