// The retrieval apps' shared parts (apps/retrieval/) and the KorQuAD generator
// (apps/korquad/): lexical tokens, the hybrid fusion and its weight, the metric table, the
// SVG charts, the run configuration, and generated data that the real reader accepts.
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "apps/korquad/korquad_generator.h"
#include "apps/retrieval/metric_table.h"
#include "apps/retrieval/rankings.h"
#include "apps/retrieval/run_config.h"
#include "apps/retrieval/svg_charts.h"
#include "data/korquad_reader.h"
#include "tests/test_helpers.h"

namespace fs = std::filesystem;
using namespace nce;
using namespace nce::apps;
using namespace nce::apps::retrieval;

TEST_CASE("lexical tokens: whitespace words without edge punctuation, and bigrams inside words") {
    CHECK(lexical_tokens("서울의 날씨는?", LexicalTokens::Whitespace) == std::vector<std::string>{"서울의", "날씨는"});
    CHECK(lexical_tokens("서울의 날씨는?", LexicalTokens::WhitespaceAndBigrams) ==
          std::vector<std::string>{"서울의", "서울", "울의", "날씨는", "날씨", "씨는"});
    CHECK(lexical_tokens("  \"Hello,\"  World! ", LexicalTokens::Whitespace) == std::vector<std::string>{"hello", "world"});
    CHECK(lexical_tokens("... ?", LexicalTokens::Whitespace).empty());
    CHECK(lexical_tokens("a", LexicalTokens::WhitespaceAndBigrams) == std::vector<std::string>{"a"});
}

TEST_CASE("bm25 rankings: the passage sharing the query's word under another particle needs bigrams") {
    std::vector<std::string> passages = {"한솔시는 1923년에 세워졌다", "다른 도시의 이야기", "한솔시의 강"};
    std::vector<std::string> queries = {"한솔시가 만들어진 해는?"};
    RankedLists words = bm25_rankings(queries, passages, LexicalTokens::Whitespace, {1.5, 0.75}, 3);
    RankedLists bigrams = bm25_rankings(queries, passages, LexicalTokens::WhitespaceAndBigrams, {1.5, 0.75}, 3);
    CHECK(words.scores[0][0] == 0.0);  // no whole word in common
    CHECK(bigrams.scores[0][0] > 0.0);
    CHECK((bigrams.passages[0][0] == 0 || bigrams.passages[0][0] == 2));
}

TEST_CASE("fusion: a convex combination of min-max normalised scores, missing entries count 0") {
    RankedLists lexical{{{0, 1, 2}}, {{10.0, 5.0, 0.0}}};  // norm: 1, 0.5, 0
    RankedLists dense{{{2, 1, 3}}, {{0.9, 0.5, 0.1}}};     // norm: 1, 0.5, 0
    RankedLists fused = fuse_rankings(lexical, dense, 0.25);
    // 0: 0.75·1 = 0.75   1: 0.75·0.5 + 0.25·0.5 = 0.5   2: 0.75·0 + 0.25·1 = 0.25   3: 0
    REQUIRE(fused.passages[0] == std::vector<int64_t>{0, 1, 2});
    CHECK(fused.scores[0][0] == doctest::Approx(0.75));
    CHECK(fused.scores[0][1] == doctest::Approx(0.5));
    CHECK(fused.scores[0][2] == doctest::Approx(0.25));
    CHECK(fuse_rankings(lexical, dense, 0.0).passages[0].front() == 0);
    CHECK(fuse_rankings(lexical, dense, 1.0).passages[0].front() == 2);
    CHECK_ERROR_MENTIONS(fuse_rankings(lexical, dense, 1.5), "dense weight");
}

TEST_CASE("fusion weight: chosen on validation, the smallest weight reaching the best MRR@10") {
    // Query 0: BM25 is right (passage 0); query 1: the model is right (passage 5).
    // Query 0 needs w < 0.976, query 1 needs w > 0.036 (solve fused scores for the winner).
    RankedLists lexical{{{0, 1, 2}, {4, 5, 6}}, {{2.0, 1.0, 0.0}, {3.0, 2.9, 0.0}}};
    RankedLists dense{{{1, 0, 2}, {5, 4, 6}}, {{0.8, 0.79, 0.0}, {0.9, 0.1, 0.0}}};
    eval::RelevantSets relevant = {{0}, {5}};
    FusionChoice choice = choose_fusion_weight(lexical, dense, relevant);
    CHECK(choice.validation_mrr == doctest::Approx(1.0));
    RankedLists fused = fuse_rankings(lexical, dense, choice.dense_weight);
    CHECK(fused.passages[0].front() == 0);
    CHECK(fused.passages[1].front() == 5);
    CHECK(choice.dense_weight == doctest::Approx(0.05));  // the smallest weight on the grid that works
}

TEST_CASE("metric table: rows scored from rankings, printed, and written as JSON that reads back") {
    RankedLists rankings{{{3, 1, 2}, {0, 2, 1}}, {{3, 2, 1}, {3, 2, 1}}};
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
        auto share = [&](LexicalTokens tokens) {
            std::vector<std::string> asked = lexical_tokens(question, tokens);
            std::vector<std::string> told = lexical_tokens(paragraph, tokens);
            std::set<std::string> known(told.begin(), told.end());
            double hits = 0;
            for (const std::string& token : asked) hits += known.count(token) ? 1 : 0;
            return hits / static_cast<double>(asked.size());
        };
        shared_words += share(LexicalTokens::Whitespace);
        shared_bigrams += share(LexicalTokens::WhitespaceAndBigrams);
    }
    shared_words /= static_cast<double>(dataset.relevance.size());
    shared_bigrams /= static_cast<double>(dataset.relevance.size());
    CHECK(shared_words < 0.35);
    CHECK(shared_bigrams > shared_words + 0.1);
}
