#include "retrieval/stackexchange/loss_comparison.h"

#include <fmt/core.h>

#include <chrono>
#include <filesystem>
#include <map>

#include "retrieval/settings/data_sizes.h"
#include "retrieval/train/pretraining.h"
#include "retrieval/run/run_preparation.h"
#include "retrieval/model/tokenizer_fingerprint.h"
#include "eval/rankings.h"
#include "retrieval/report/svg_charts.h"
#include "retrieval/model/text_model.h"
#include "retrieval/train/training.h"
#include "retrieval/stackexchange/evaluation_views.h"
#include "retrieval/stackexchange/loss_significance.h"
#include "retrieval/stackexchange/posts_dataset.h"
#include "eval/metrics.h"
#include "nn/checkpoint.h"

namespace nce::stackexchange {
namespace {

namespace fs = std::filesystem;

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::vector<std::string> query_texts(const data::RetrievalDataset& split) {
    std::vector<std::string> texts;
    for (const data::Query& query : split.queries) texts.push_back(query.text);
    return texts;
}

std::vector<std::string> passage_texts(const data::RetrievalDataset& split) {
    std::vector<std::string> texts;
    for (const data::Passage& passage : split.passages) texts.push_back(passage.text);
    return texts;
}

// A split's texts embedded by one model (each after the model's own query or passage
// prompt), counting the texts cut at the maximum lengths.
struct SplitEmbeddings {
    Tensor queries;   // [Q, D]
    Tensor passages;  // [N, D]
};

SplitEmbeddings embed_split(nn::EmbeddingModel& model, const data::Tokenizer& tokenizer,
                            const data::RetrievalDataset& split, const retrieval::RunConfig& config,
                            retrieval::TruncationCount* query_count = nullptr,
                            retrieval::TruncationCount* passage_count = nullptr) {
    const nn::ModelConfig& prompts = model.config();
    return {retrieval::encode_texts(model, tokenizer, retrieval::with_prompt(prompts.query_prompt, query_texts(split)),
                                    config.max_query_length, config.encode_batch_size, query_count),
            retrieval::encode_texts(model, tokenizer,
                                    retrieval::with_prompt(prompts.passage_prompt, passage_texts(split)),
                                    config.max_passage_length, config.encode_batch_size, passage_count)};
}

// Appends one ranker's row to the table of every view.
void add_rows(std::vector<retrieval::MetricTable>& tables, const std::string& name, const ScoreMatrix& scores,
              const EvaluationViews& views) {
    for (size_t v = 0; v < all_views().size(); ++v)
        tables[v].rows.push_back(
            score_view(name, rank_in_view(scores, views, all_views()[v]), views, tables[v].bootstrap));
}

// The metric each view's losses are tested on against the best (at retrieval::kSignificanceLevel).
const char* const kTestedMetric = "mrr@10";

}  // namespace

ComparisonOutcome run_loss_comparison(const retrieval::RetrievalApp& app, const retrieval::RunConfig& given_config) {
    retrieval::RunConfig config = given_config;
    auto start = std::chrono::steady_clock::now();
    // --init FOLDER: every loss fine-tunes the same pretrained model (its tokenizer, the
    // fine-tuning defaults, no corpus pretraining); the zero-shot model is the first row.
    retrieval::ModelSource source(config.init);
    const bool fine_tuning = source.is_folder();
    NCE_CHECK(config.init.empty() || fine_tuning, "compare: --init {} is no pretrained model folder (modules.json or "
              "config.json with model.safetensors); every loss starts from such a folder or from a fresh model",
              config.init);
    StackExchangeSettings settings = read_settings(config);
    retrieval::check_output_folder(config.output);
    std::string compare_dir = (fs::path(config.output) / "compare").string();

    // 1. Data, split, and the one tokenizer every model shares.
    data::RetrievalDataset dataset = app.load_dataset(config);
    data::DatasetSplits splits = retrieval::split_for_app(app, dataset, config);
    fmt::print("split by question: train {} / validation {} / test {} questions ({} / {} / {} answers)\n",
               splits.train.queries.size(), splits.validation.queries.size(), splits.test.queries.size(),
               splits.train.passages.size(), splits.validation.passages.size(), splits.test.passages.size());
    retrieval::create_output_folder(compare_dir);
    retrieval::RunConfig sizing = config;
    sizing.output = compare_dir;
    data::Tokenizer tokenizer =
        retrieval::sized_run_tokenizer(app, sizing, source, splits, retrieval::RunFiles(compare_dir));
    config.vocab_size = sizing.vocab_size;
    config.max_query_length = sizing.max_query_length;
    config.max_passage_length = sizing.max_passage_length;
    if (fine_tuning) {
        std::string settings_changed = retrieval::use_fine_tuning_defaults(
            config, source, app, static_cast<int64_t>(splits.train.queries.size()));
        config.pretrain_steps = 0;
        fmt::print("every loss fine-tunes {}: {}; no corpus pretraining\n", config.init, settings_changed);
    }
    retrieval::write_run_config((fs::path(compare_dir) / "config.json").string(), config);

    // 2. The views of the test split, BM25 on both splits, the tables.
    eval::Bm25Parameters bm25{config.bm25_k1, config.bm25_b};
    ScoreMatrix lexical = bm25_score_matrix(query_texts(splits.test), passage_texts(splits.test),
                                            eval::LexicalTokens::Whitespace, bm25);
    EvaluationViews views = make_evaluation_views(splits.test, lexical, settings.views);
    eval::RankedLists validation_lexical =
        eval::bm25_rankings(query_texts(splits.validation), passage_texts(splits.validation),
                                 eval::LexicalTokens::Whitespace, bm25, config.candidate_depth);
    eval::RelevantSets validation_relevant = eval::relevant_sets(splits.validation);
    std::vector<retrieval::MetricTable> tables;
    // Every row of every view resamples the same test questions (the run's seed), so the
    // paired tests below compare two losses on identical replicates.
    const eval::BootstrapOptions bootstrap{1000, config.seed, 0.95};
    for (View view : all_views())
        tables.push_back({fmt::format("stackexchange loss comparison, {} view ({} test questions)", view_name(view),
                                      splits.test.queries.size()),
                          view_columns(),
                          {},
                          "",
                          bootstrap});

    // 3. The untrained model and BM25.
    retrieval::TruncationCount test_queries, test_passages;
    // Where every loss starts: the pretrained folder (read once, each loss a copy), or a fresh model.
    std::unique_ptr<nn::EmbeddingModel> pretrained_start = fine_tuning ? source.read_folder_model(config) : nullptr;
    auto start_model = [&]() {
        return fine_tuning ? retrieval::copied_model(*pretrained_start)
                           : retrieval::make_text_encoder(config, tokenizer.vocab_size());
    };
    {
        auto untrained = start_model();
        SplitEmbeddings test = embed_split(*untrained, tokenizer, splits.test, config, &test_queries, &test_passages);
        add_rows(tables, fine_tuning ? "pretrained, zero-shot" : "untrained model",
                 dense_score_matrix(test.queries, test.passages), views);
    }
    add_rows(tables, "BM25 (whitespace)", lexical, views);

    // 3b. Corpus pretraining once (retrieval/train/pretraining.h); every loss starts from it.
    std::string pretrained_path = (fs::path(compare_dir) / "pretrained.safetensors").string();
    bool pretrained = config.pretrain_steps != 0;
    nlohmann::json pretraining_facts;
    if (pretrained) {
        auto model = retrieval::make_text_encoder(config, tokenizer.vocab_size());
        fmt::print("pretraining on the corpus ({} answers): imitating BM25 on pseudo-queries\n", dataset.passages.size());
        std::fflush(stdout);
        retrieval::PretrainingReport report = retrieval::pretrain_text_encoder(
            *model, tokenizer, dataset.passages, app.bm25_variants.back(), app.chunk_overlap, config,
            (fs::path(compare_dir) / "pretrain_log.jsonl").string());
        retrieval::save_run_model(pretrained_path, *model, tokenizer, {{"pretraining", "imitating BM25 on the corpus"}});
        fmt::print("pretrained {} steps on {} windows in {:.1f} s; every loss starts from {}\n", report.steps,
                   report.windows, report.seconds, pretrained_path);
        pretraining_facts = {{"steps", report.steps}, {"windows", report.windows}, {"seconds", report.seconds},
                             {"teacher_top1_on_pseudo_queries", report.teacher_top1},
                             {"model_top1_on_pseudo_queries", report.model_top1}};
        SplitEmbeddings test = embed_split(*model, tokenizer, splits.test, config);
        add_rows(tables, "pretrained model (imitates BM25)", dense_score_matrix(test.queries, test.passages), views);
    }

    // 4. One model per loss, from the same start with the same budget.
    nlohmann::json loss_facts = nlohmann::json::object();
    std::vector<retrieval::CurveSeries> loss_curves;
    std::string best_loss;
    double best_validation_mrr = -1;
    ScoreMatrix best_test_scores;
    eval::RankedLists best_validation_dense;
    for (const std::string& loss : settings.losses) {
        retrieval::RunConfig loss_config = config;
        loss_config.loss = loss;
        loss_config.output = (fs::path(compare_dir) / loss).string();
        retrieval::RunFiles files(loss_config.output);
        retrieval::create_output_folder(files.output);
        fmt::print("\n[{}] training {} steps\n", loss, loss_config.max_steps);
        auto model = pretrained ? retrieval::load_text_encoder(pretrained_path) : start_model();
        // Each loss keeps its best trained parameters, never the shared start: the start has
        // its own row (the pretrained model), and a loss that only loses to it shows it.
        retrieval::TrainingReport report = retrieval::train_text_encoder(
            *model, tokenizer, splits.train, splits.validation, loss_config, files, /*start_is_a_candidate=*/false);
        retrieval::write_training_curves_svg(files.log, files.curves_svg, fmt::format("stackexchange, {}", loss));
        for (const retrieval::CurveSeries& series : retrieval::read_training_curves(files.log))
            if (series.name == "training loss") loss_curves.push_back({loss, series.x, series.y});

        SplitEmbeddings test = embed_split(*model, tokenizer, splits.test, config);
        ScoreMatrix scores = dense_score_matrix(test.queries, test.passages);
        add_rows(tables, loss, scores, views);
        SplitEmbeddings validation = embed_split(*model, tokenizer, splits.validation, config);
        eval::RankedLists validation_dense =
            eval::dense_rankings(validation.queries, validation.passages, config.candidate_depth);
        double validation_mrr =
            eval::retrieval_metrics(eval::passage_lists(validation_dense), validation_relevant, {10}).at(10).mrr;
        fmt::print("[{}] {} steps in {:.1f} s, last loss {:.4f}, validation MRR@10 {:.3f}\n", loss,
                   report.result.steps, report.seconds, report.result.last_loss, validation_mrr);
        loss_facts[loss] = {{"steps", report.result.steps},
                            {"training_seconds", report.seconds},
                            {"last_loss", report.result.last_loss},
                            {"validation_mrr@10", validation_mrr},
                            {"stopped_early", report.result.stopped_early},
                            {"batches_per_epoch", report.batches_per_epoch}};
        if (validation_mrr > best_validation_mrr) {
            best_validation_mrr = validation_mrr;
            best_loss = loss;
            best_test_scores = std::move(scores);
            best_validation_dense = std::move(validation_dense);
        }
    }

    // 5. The hybrid: BM25 fused with the best loss's model, weighted on validation.
    eval::FusionChoice fusion =
        eval::choose_fusion_weight(validation_lexical, best_validation_dense, validation_relevant);
    std::string hybrid_name = fmt::format("hybrid (BM25 + {})", best_loss);
    for (size_t v = 0; v < all_views().size(); ++v) {
        View view = all_views()[v];
        eval::RankedLists fused = eval::fuse_rankings(
            rank_in_view(lexical, views, view), rank_in_view(best_test_scores, views, view), fusion.dense_weight);
        tables[v].rows.push_back(score_view(hybrid_name, fused, views, bootstrap));
    }

    // 6. In each view, every loss against the best loss there (paired bootstrap, loss_significance.h).
    std::vector<SignificanceAgainstBest> significance;
    for (retrieval::MetricTable& table : tables)
        significance.push_back(
            mark_losses_against_best(table, settings.losses, kTestedMetric, retrieval::kSignificanceLevel, bootstrap));

    // 7. Show and write.
    ComparisonOutcome outcome{tables, significance, best_loss, seconds_since(start)};
    fmt::print("\n");
    for (const retrieval::MetricTable& table : tables) fmt::print("{}\n", retrieval::format_metric_table(table));
    fmt::print("{}", significance_note(kTestedMetric, retrieval::kSignificanceLevel, bootstrap));
    for (size_t v = 0; v < all_views().size(); ++v)
        fmt::print("{}", best_against_untrained_line(view_name(all_views()[v]), significance[v]));
    fmt::print("hybrid: dense weight {:.2f} (chosen on validation, MRR@10 {:.3f}); {} of {} test questions and {} of "
               "{} answers were truncated to {} / {} tokens\n",
               fusion.dense_weight, fusion.validation_mrr, test_queries.truncated, test_queries.texts,
               test_passages.truncated, test_passages.texts, config.max_query_length, config.max_passage_length);

    nlohmann::json results = {
        {"title", "stackexchange loss comparison"},
        {"data", config.data.empty() ? "generated" : config.data},
        {"seed", config.seed},
        {"split", {{"train_questions", splits.train.queries.size()},
                   {"validation_questions", splits.validation.queries.size()},
                   {"test_questions", splits.test.queries.size()},
                   {"test_answers", splits.test.passages.size()}}},
        {"views", nlohmann::json::object()},
        {"view_options", {{"in_batch_questions", settings.views.batch_questions},
                          {"hard_negatives", settings.views.hard_negatives}}},
        {"losses", loss_facts},
        {"best_loss", best_loss},
        {"fusion", {{"dense_weight", fusion.dense_weight}, {"validation_mrr@10", fusion.validation_mrr}}},
        {"truncated", {{"test_questions", test_queries.truncated}, {"test_answers", test_passages.truncated}}},
        {"seconds", outcome.seconds},
    };
    if (pretrained) results["pretraining"] = pretraining_facts;
    for (size_t v = 0; v < all_views().size(); ++v) {
        results["views"][view_name(all_views()[v])] = retrieval::metric_table_to_json(
            tables[v], {{"paired_test", significance_to_json(significance[v])}});
        retrieval::write_metric_bars_svg(
            tables[v], (fs::path(compare_dir) / fmt::format("compare_{}.svg", view_name(all_views()[v]))).string());
    }
    std::string curves_path = (fs::path(compare_dir) / "training_loss.svg").string();
    retrieval::write_text_file_atomically(
        curves_path, retrieval::training_curves_svg(loss_curves, "stackexchange: training loss per loss"));
    std::string results_path = (fs::path(compare_dir) / "compare.json").string();
    retrieval::write_text_file_atomically(results_path, results.dump(2) + "\n");
    fmt::print("wrote {} and the charts in {} ({:.0f} s in all)\n", results_path, compare_dir, outcome.seconds);
    return outcome;
}

}  // namespace nce::stackexchange
