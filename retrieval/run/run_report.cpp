#include "retrieval/run/run_report.h"

#include <filesystem>
#include <fmt/format.h>

#include "engine/atomic_file.h"
#include "engine/threads.h"
#include "retrieval/report/metric_table.h"
#include "retrieval/report/model_card.h"
#include "retrieval/report/svg_charts.h"
#include "retrieval/model/text_model.h"

namespace nce::retrieval {

namespace fs = std::filesystem;

// The split sizes for results.json.
nlohmann::json split_sizes(const data::DatasetSplits& splits) {
    auto sizes = [](const data::RetrievalDataset& d) {
        return nlohmann::json{{"queries", d.queries.size()}, {"passages", d.passages.size()}};
    };
    return {{"train", sizes(splits.train)}, {"validation", sizes(splits.validation)}, {"test", sizes(splits.test)}};
}

void print_truncation(const char* what, const TruncationCount& count, int64_t max_length) {
    if (count.truncated > 0)
        fmt::print("{} of {} {} were longer than {} tokens and were truncated\n", count.truncated, count.texts, what,
                   max_length);
}

// Writes results.json, metrics.svg and (after training) training_curves.svg; prints the table.
void report(const RetrievalApp& app, const RunConfig& config, const RunFiles& files, const RunOutcome& outcome,
            const nlohmann::json& facts, bool trained) {
    nlohmann::json extra = facts;
    extra["app"] = app.name;
    extra["data"] = config.data.empty() ? "generated" : config.data;
    extra["seed"] = config.seed;
    extra["threads"] = num_threads();
    extra["gemm_precision"] = config.gemm_precision;
    extra["fusion"] = {{"method", "dense_weight * minmax(dense) + (1 - dense_weight) * minmax(bm25), per query"},
                       {"dense_weight", outcome.fusion.dense_weight},
                       {"chosen_on", "validation MRR@10"},
                       {"validation_mrr@10", outcome.fusion.validation_mrr}};
    extra["against_bm25"] = baseline_comparison_to_json(outcome.against_bm25);
    extra["truncated"] = {{"test_queries", outcome.test_queries.truncated},
                          {"test_passages", app.chunked_passages ? 0 : outcome.test_passages.truncated},
                          {"test_passages_read_in_chunks", outcome.test_passages_in_chunks},
                          {"max_query_length", config.max_query_length},
                          {"max_passage_length", config.max_passage_length}};
    if (trained) {
        extra["training"] = {{"loss", config.loss},
                             {"steps", outcome.training.result.steps},
                             {"last_loss", outcome.training.result.last_loss},
                             {"best_validation_mrr@10", outcome.training.result.best_metric.value_or(-1.0)},
                             {"best_step", outcome.training.best_step},
                             {"stopped_early", outcome.training.result.stopped_early},
                             {"batches_per_epoch", outcome.training.batches_per_epoch},
                             {"seconds", outcome.training.seconds},
                             {"truncated_train_queries", outcome.training.queries.truncated},
                             {"truncated_train_passages", outcome.training.passages.truncated}};
    }
    extra["seconds"] = outcome.seconds;
    extra["test_split"] = app.test_split_name ? app.test_split_name(config) : "test split";
    if (app.extra_results) {
        nlohmann::json app_facts = app.extra_results(config);
        if (app_facts.is_object())
            for (const auto& [key, value] : app_facts.items()) extra[key] = value;
    }
    write_results_json(files.results, outcome.table, extra);
    if (trained)
        write_text_file_atomically(files.model_card,
                                   model_card_markdown("nce " + app.name, config, outcome.table, extra));
    write_metric_bars_svg(outcome.table, files.metrics_svg);
    if (trained && fs::exists(files.log))
        write_training_curves_svg(files.log, files.curves_svg, fmt::format("nce {}: training ({})", app.name, config.loss));
    fmt::print("\n{}\n", format_metric_table(outcome.table));
    fmt::print("{}", baseline_comparison_note(outcome.against_bm25));
    fmt::print("hybrid: {:.2f} x dense + {:.2f} x BM25 (min-max normalised per query; weight chosen on validation MRR@10 "
               "{:.3f})\n",
               outcome.fusion.dense_weight, 1 - outcome.fusion.dense_weight, outcome.fusion.validation_mrr);
    print_truncation("test queries", outcome.test_queries, config.max_query_length);
    if (app.chunked_passages)
        fmt::print("the model read the {} test passages longer than {} tokens in overlapping chunks ({} tokens of "
                   "overlap), each passage scoring as its best chunk\n",
                   outcome.test_passages_in_chunks, config.max_passage_length, app.chunk_overlap);
    else
        print_truncation("test passages", outcome.test_passages, config.max_passage_length);
    fmt::print("wrote {} (results.json, metrics.svg{}) in {:.1f} s\n", files.output,
               !trained ? ""
               : is_model_folder(config.init)
                   ? ", training_curves.svg, model.safetensors, tokenizer/, sentence-transformers/, train_log.jsonl, README.md"
                   : ", training_curves.svg, model.safetensors, tokenizer.model, train_log.jsonl, README.md",
               outcome.seconds);
}

// The facts of results.json every run starts with: the split's sizes and the tokenizer's.
nlohmann::json split_and_tokenizer_facts(const data::DatasetSplits& splits, const data::Tokenizer& tokenizer) {
    return {{"split", split_sizes(splits)},
            {"tokenizer_pieces", tokenizer.vocab_size()},
            {"tokenizer_identifier_words", tokenizer.reads_identifier_words()}};
}

// The prompts a model reads with, for results.json.
nlohmann::json prompts_fact(const nn::EmbeddingModel& model) {
    return {{"query", model.config().query_prompt}, {"passage", model.config().passage_prompt}};
}

nlohmann::json pretraining_facts(const PretrainingReport& report) {
    return {{"corpus", "every passage of the data set (no query, no label)"},
            {"passages", report.passages},
            {"windows", report.windows},
            {"steps", report.steps},
            {"last_loss", report.last_loss},
            {"seconds", report.seconds},
            {"teacher_top1_on_pseudo_queries", report.teacher_top1},
            {"model_top1_on_pseudo_queries", report.model_top1}};
}

nlohmann::json term_share_fact(const TermShareChoice& choice) {
    return {{"share", choice.share}, {"validation_mrr10", choice.mrr}, {"learned_share", choice.learned_share},
            {"learned_validation_mrr10", choice.learned_mrr}};
}

}  // namespace nce::retrieval
