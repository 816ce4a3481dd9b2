// `nce stackexchange`'s own parts: the generated site, the filter of unanswered questions,
// the app's settings, the three evaluation views of `compare` and its marks of the losses
// that differ significantly from the best.
#include <filesystem>
#include <fstream>
#include <set>

#include "retrieval/stackexchange/evaluation_views.h"
#include "retrieval/stackexchange/generated_site.h"
#include "retrieval/stackexchange/loss_significance.h"
#include "retrieval/stackexchange/posts_dataset.h"
#include "data/stackexchange_reader.h"
#include "tests/test_helpers.h"

namespace nce::stackexchange {
namespace {

namespace fs = std::filesystem;

// A fresh folder under the system's temporary folder, removed at the end of the test.
struct TemporaryFolder {
    fs::path path;
    explicit TemporaryFolder(const std::string& name)
        : path(fs::temp_directory_path() / (name + "-" + std::to_string(::getpid()))) {
        fs::remove_all(path);
        fs::create_directories(path);
    }
    ~TemporaryFolder() { fs::remove_all(path); }
};

data::RetrievalDataset generated_dataset(const GeneratedSiteOptions& options, const TemporaryFolder& folder) {
    std::string path = write_generated_site(folder.path.string(), options);
    return data::read_stackexchange_posts(path, data::Leniency::Strict);
}

// accuracy@1 of whitespace BM25 over a whole data set: how often the top answer is relevant.
double bm25_accuracy_at_1(const data::RetrievalDataset& dataset) {
    std::vector<std::string> queries, passages;
    for (const auto& query : dataset.queries) queries.push_back(query.text);
    for (const auto& passage : dataset.passages) passages.push_back(passage.text);
    ScoreMatrix scores = bm25_score_matrix(queries, passages, eval::LexicalTokens::Whitespace, {1.5, 0.75});
    EvaluationViews views = make_evaluation_views(dataset, scores, {});
    return score_view("bm25", rank_in_view(scores, views, View::Overall), views).metrics.at("accuracy@1");
}

TEST_CASE("generated site: read back by the dump reader, deterministic, with scores, accepted answers and HTML") {
    TemporaryFolder folder("nce-stackexchange-site");
    GeneratedSiteOptions options;
    options.questions = 120;
    options.seed = 5;
    CHECK(generate_posts_xml(options) == generate_posts_xml(options));
    GeneratedSiteOptions other = options;
    other.seed = 6;
    CHECK(generate_posts_xml(options) != generate_posts_xml(other));
    CHECK(generate_posts_xml(options).find("&lt;p&gt;") != std::string::npos);  // HTML, escaped as in a dump

    data::RetrievalDataset dataset = generated_dataset(options, folder);
    CHECK(dataset.queries.size() == 120);
    CHECK(dataset.report.skipped.at("other post type") == 1);  // the tag wiki row
    std::vector<int64_t> answers(dataset.queries.size(), 0);
    int64_t accepted = 0, negative = 0;
    for (const data::Relevance& relevance : dataset.relevance) {
        ++answers[static_cast<size_t>(relevance.query)];
        accepted += relevance.accepted;
        negative += relevance.score < 0;
    }
    std::set<int64_t> answer_counts(answers.begin(), answers.end());
    CHECK(*answer_counts.begin() == 1);
    CHECK(*answer_counts.rbegin() == options.max_answers);
    CHECK(accepted > 30);
    CHECK(accepted < 120);
    CHECK(negative > 0);
    for (const auto& passage : dataset.passages) CHECK(passage.text.find("<p>") == std::string::npos);
}

TEST_CASE("generated site: paraphrasing is what makes it hard for BM25") {
    TemporaryFolder folder("nce-stackexchange-paraphrase");
    GeneratedSiteOptions literal;
    literal.questions = 200;
    literal.paraphrase_probability = 0.0;
    GeneratedSiteOptions paraphrased = literal;
    paraphrased.paraphrase_probability = 1.0;
    double literal_accuracy = bm25_accuracy_at_1(generated_dataset(literal, folder));
    double paraphrased_accuracy = bm25_accuracy_at_1(generated_dataset(paraphrased, folder));
    MESSAGE("BM25 accuracy@1: literal " << literal_accuracy << ", paraphrased " << paraphrased_accuracy);
    CHECK(literal_accuracy > 0.5);
    // Fully paraphrased, the question's own words appear only in other questions' answers.
    CHECK(paraphrased_accuracy < literal_accuracy - 0.3);
}

TEST_CASE("generated site: options out of range are one line naming the option") {
    GeneratedSiteOptions options;
    options.questions = 0;
    CHECK_ERROR_MENTIONS(generate_posts_xml(options), "--questions");
    options.questions = 3;
    options.paraphrase_probability = 1.5;
    CHECK_ERROR_MENTIONS(generate_posts_xml(options), "paraphrase_probability");
}

// Three questions: q0 with answers a0 a1, q1 without one, q2 with a2 (empty text) and a3.
data::RetrievalDataset small_dataset() {
    data::RetrievalDataset dataset;
    dataset.queries = {{"1", "how to brew", "1"}, {"2", "no answers here", "2"}, {"3", "best hops", "3"}};
    dataset.passages = {{"10", "boil it", "1"}, {"11", "ferment it", "1"}, {"12", "  ", "3"}, {"13", "citra", "3"}};
    dataset.relevance = {{0, 0, 5, 0, true}, {0, 1, 2, 1, false}, {2, 2, 9, 0, false}, {2, 3, 1, 1, false}};
    return dataset;
}

TEST_CASE("keep_answered_questions: drops unanswered questions and empty answers, re-indexes and re-ranks") {
    PostsFilterReport report;
    data::RetrievalDataset kept = keep_answered_questions(small_dataset(), "Posts.xml", &report);
    CHECK(report.questions_without_answer == 1);
    CHECK(report.empty_answers == 1);
    REQUIRE(kept.queries.size() == 2);
    CHECK(kept.queries[1].id == "3");
    REQUIRE(kept.passages.size() == 3);
    CHECK(kept.passages[2].id == "13");
    REQUIRE(kept.relevance.size() == 3);
    CHECK(kept.relevance[2].query == 1);
    CHECK(kept.relevance[2].passage == 2);
    CHECK(kept.relevance[2].rank == 0);  // a3 is q2's best answer once a2 is gone

    data::RetrievalDataset nothing = small_dataset();
    nothing.relevance.clear();
    CHECK_ERROR_MENTIONS(keep_answered_questions(nothing, "empty/Posts.xml"), "empty/Posts.xml: no question with an answer");
}

TEST_CASE("read_settings: the app's keys, with one line for an unknown key, a wrong type or an unknown loss") {
    retrieval::RunConfig config;
    config.seed = 21;
    config.app = {{"questions", 50}, {"losses", {"infonce", "triplet"}}, {"hard_negatives", 3}};
    StackExchangeSettings settings = read_settings(config);
    CHECK(settings.site.questions == 50);
    CHECK(settings.site.seed == 21);
    CHECK(settings.losses == std::vector<std::string>{"infonce", "triplet"});
    CHECK(settings.views.hard_negatives == 3);

    config.app = {{"questoins", 50}};
    CHECK_ERROR_MENTIONS(read_settings(config), "\"app\".\"questoins\"");
    config.app = {{"questions", "many"}};
    CHECK_ERROR_MENTIONS(read_settings(config), "\"app\".\"questions\" has the wrong type");
    config.app = {{"losses", {"infonce", "no_such_loss"}}};
    CHECK_ERROR_MENTIONS(read_settings(config), "unknown loss 'no_such_loss'");
}

// Four questions, each with its own answers: q0 {p0, p1}, q1 {p2}, q2 {p3}, q3 {p4}.
data::RetrievalDataset four_questions() {
    data::RetrievalDataset dataset;
    for (int q = 0; q < 4; ++q) dataset.queries.push_back({std::to_string(q), "question", std::to_string(q)});
    for (int p = 0; p < 5; ++p) dataset.passages.push_back({std::to_string(p), "answer", ""});
    dataset.relevance = {{0, 0}, {0, 1}, {1, 2}, {2, 3}, {3, 4}};
    return dataset;
}

TEST_CASE("evaluation views: in-batch blocks, BM25's strangers as hard negatives, ranking and metrics") {
    data::RetrievalDataset dataset = four_questions();
    // Lexical scores: each query's strangers ranked p4 > p3 > p2 > ... (ties by index).
    ScoreMatrix lexical = {{0, 0, 1, 2, 3}, {0, 0, 1, 2, 3}, {5, 0, 5, 0, 0}, {1, 1, 1, 1, 0}};
    EvaluationViews views = make_evaluation_views(dataset, lexical, {2, 1});
    CHECK(views.in_batch_candidates[0] == std::vector<int64_t>{0, 1, 2});
    CHECK(views.in_batch_candidates[1] == std::vector<int64_t>{0, 1, 2});
    CHECK(views.in_batch_candidates[3] == std::vector<int64_t>{3, 4});
    CHECK(views.hard_negative_candidates[0] == std::vector<int64_t>{0, 1, 4});
    CHECK(views.hard_negative_candidates[2] == std::vector<int64_t>{0, 3});  // p0 and p2 tie: lower index
    CHECK(views.hard_negative_candidates[3] == std::vector<int64_t>{0, 4});  // p0..p3 tie: p0

    // A ranker that likes p4 best for every query. Hard-negative view: q0 ranks {p4, p0, p1}
    // and q1 {p4, p2} (right answer second); q2 ranks {p3, p0} and q3 {p4, p0} (right first).
    ScoreMatrix dense = {{0.5, 0.1, 0, 0, 1}, {0, 0, 0.5, 0, 1}, {0, 0, 0, 0.5, 1}, {0, 0, 0, 0, 1}};
    eval::RankedLists overall = rank_in_view(dense, views, View::Overall);
    CHECK(overall.passages[0] == std::vector<int64_t>{4, 0, 1, 2, 3});
    CHECK(overall.scores[0][0] == 1.0);
    retrieval::MetricRow row = score_view("dense", rank_in_view(dense, views, View::HardNegative), views);
    CHECK(row.metrics.at("accuracy@1") == doctest::Approx(0.5));
    CHECK(row.metrics.at("mrr@10") == doctest::Approx((0.5 + 0.5 + 1.0 + 1.0) / 4));
    retrieval::MetricRow in_batch = score_view("dense", rank_in_view(dense, views, View::InBatch), views);
    CHECK(in_batch.metrics.at("accuracy@1") == doctest::Approx(0.75));  // q0 p0, q1 p2, q3 p4 first; q2 p4

    CHECK_ERROR_MENTIONS(make_evaluation_views(dataset, lexical, {0, 1}), "in_batch_questions");
}

// A row as retrieval::score_rankings makes it, from per-query values of mrr@10 alone.
retrieval::MetricRow row_of(const std::string& name, const std::vector<double>& per_query) {
    double sum = 0;
    for (double value : per_query) sum += value;
    return {name, {{"mrr@10", sum / static_cast<double>(per_query.size())}}, {}, {{"mrr@10", per_query}}};
}

TEST_CASE("loss significance: the best loss, a clearly worse loss marked, an identical one not") {
    // 120 questions. "strong" finds the answer first for 100, "weak" for 40 of the same, "twin"
    // has exactly strong's values, BM25 is not a loss and stays unmarked.
    std::vector<double> strong(120, 0.0), weak(120, 0.0);
    for (size_t q = 0; q < 100; ++q) strong[q] = 1.0;
    for (size_t q = 0; q < 40; ++q) weak[q] = 1.0;
    retrieval::MetricTable table{"view", {"mrr@10"}, {row_of("BM25 (whitespace)", weak), row_of("weak", weak),
                                                      row_of("strong", strong), row_of("twin", strong)}};
    eval::BootstrapOptions bootstrap{1000, 5, 0.95};
    SignificanceAgainstBest result =
        mark_losses_against_best(table, {"weak", "strong", "twin"}, "mrr@10", 0.05, bootstrap);
    CHECK(result.best == "strong");  // strong and twin tie: the first listed
    REQUIRE(result.others.size() == 2);
    CHECK(result.others[0].loss == "weak");
    CHECK(result.others[0].test.difference == doctest::Approx(-0.5));
    CHECK(result.others[0].test.significant());
    CHECK(result.others[1].loss == "twin");
    CHECK(result.others[1].test.p_value == 1.0);
    CHECK(table.mark_column == "vs best mrr@10");
    CHECK(table.row("strong").mark == "best");
    CHECK(table.row("weak").mark == "p<0.001 *");
    CHECK(table.row("twin").mark == "p=1.000");
    CHECK(table.row("BM25 (whitespace)").mark.empty());

    std::string text = retrieval::format_metric_table(table);
    CHECK(text.find("vs best mrr@10") != std::string::npos);
    CHECK(text.find("p<0.001 *") != std::string::npos);
    nlohmann::json json = significance_to_json(result);
    CHECK(json["best"] == "strong");
    CHECK(json["losses"]["weak"]["p_value"].get<double>() == result.others[0].test.p_value);
    CHECK(json["losses"]["weak"]["significant"] == true);
    CHECK(json["losses"]["twin"]["significant"] == false);
    CHECK(retrieval::metric_table_to_json(table)["rows"][1]["mark"] == "p<0.001 *");
    std::string note = significance_note("mrr@10", 0.05, bootstrap);
    CHECK(note.find("* = the difference is significant at 5%") != std::string::npos);
    CHECK(note.find("1000 resamples") != std::string::npos);

    CHECK(significance_mark({0.01, -0.02, 0.04, 0.4123}, 0.05, 1000) == "p=0.412");
    CHECK(significance_mark({0.1, 0.02, 0.2, 0.004}, 0.05, 1000) == "p=0.004 *");
    CHECK_ERROR_MENTIONS(mark_losses_against_best(table, {"strong", "missing"}, "mrr@10", 0.05, bootstrap),
                         "no row named 'missing'");
    CHECK_ERROR_MENTIONS(mark_losses_against_best(table, {"strong"}, "ndcg@10", 0.05, bootstrap),
                         "no per-query values of ndcg@10");
    // No untrained row: no test of the best against it.
    CHECK_FALSE(result.best_against_untrained.has_value());
    CHECK(json["best_against_untrained"].is_null());
    CHECK(best_against_untrained_line("overall", result).empty());
}

TEST_CASE("loss significance: the best loss against the untrained model, beyond the noise or not") {
    std::vector<double> strong(120, 0.0), weak(120, 0.0);
    for (size_t q = 0; q < 100; ++q) strong[q] = 1.0;
    for (size_t q = 0; q < 40; ++q) weak[q] = 1.0;
    eval::BootstrapOptions bootstrap{1000, 5, 0.95};
    // The untrained model as weak as "weak": the best ("strong") is above it beyond the noise.
    retrieval::MetricTable table{"view", {"mrr@10"}, {row_of("untrained model", weak), row_of("strong", strong)}};
    SignificanceAgainstBest result = mark_losses_against_best(table, {"strong"}, "mrr@10", 0.05, bootstrap);
    REQUIRE(result.best_against_untrained.has_value());
    CHECK(result.best_against_untrained->difference == doctest::Approx(0.5));
    CHECK(result.best_against_untrained->significant());
    CHECK(table.row("untrained model").mark.empty());  // not a loss: unmarked
    CHECK(significance_to_json(result)["best_against_untrained"]["significant"] == true);
    CHECK(best_against_untrained_line("overall", result).find("above it beyond the noise") != std::string::npos);
    // An untrained model as good as the best: no difference.
    retrieval::MetricTable level{"view", {"mrr@10"}, {row_of("untrained model", strong), row_of("strong", strong)}};
    SignificanceAgainstBest same = mark_losses_against_best(level, {"strong"}, "mrr@10", 0.05, bootstrap);
    REQUIRE(same.best_against_untrained.has_value());
    CHECK_FALSE(same.best_against_untrained->significant());
    CHECK(best_against_untrained_line("in-batch", same).find("(no difference)") != std::string::npos);
}

TEST_CASE("score_view: every cell carries its interval and per-query values") {
    data::RetrievalDataset dataset = four_questions();
    ScoreMatrix lexical = {{0, 0, 1, 2, 3}, {0, 0, 1, 2, 3}, {5, 0, 5, 0, 0}, {1, 1, 1, 1, 0}};
    EvaluationViews views = make_evaluation_views(dataset, lexical, {2, 1});
    retrieval::MetricRow row = score_view("bm25", rank_in_view(lexical, views, View::Overall), views, {1000, 1, 0.95});
    for (const std::string& column : view_columns()) {
        REQUIRE(row.intervals.count(column) == 1);
        CHECK(row.intervals.at(column).low <= row.metrics.at(column));
        CHECK(row.intervals.at(column).high >= row.metrics.at(column));
        CHECK(row.per_query.at(column).size() == 4);
    }
}

}  // namespace
}  // namespace nce::stackexchange
