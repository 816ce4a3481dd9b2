// The shared end-to-end run of a retrieval app: train, pretrain, eval and index.
#include "retrieval/run/retrieval_app.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "retrieval/settings/device_name.h"
#include "retrieval/settings/data_sizes.h"
#include "retrieval/run/run_preparation.h"
#include "retrieval/run/run_report.h"
#include "retrieval/model/tokenizer_fingerprint.h"
#include "retrieval/index/dense_ranker.h"
#include "retrieval/report/model_card.h"
#include "retrieval/index/passage_index.h"
#include "retrieval/train/pretraining.h"
#include "retrieval/embedding/run_device.h"
#include "retrieval/report/svg_charts.h"
#include "retrieval/train/term_share.h"
#include "retrieval/model/text_model.h"
#include "retrieval/train/bm25_negatives.h"
#include "retrieval/train/training_windows.h"
#include "distributed/rank_output_folder.h"
#include "distributed/world.h"
#include "engine/atomic_file.h"
#include "engine/blas_core_fit.h"
#include "engine/error.h"
#include "engine/json_nesting.h"
#include "engine/threads.h"
#include "nn/checkpoint.h"
#include "nn/sentence_transformers_folder.h"

namespace nce::retrieval {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

std::string bm25_row_name(eval::LexicalTokens tokens) { return fmt::format("BM25 ({})", eval::lexical_tokens_name(tokens)); }

// Corpus pretraining of `model` (pretraining.h) over every passage of the data set; saves
// pretrained.safetensors. Prints what it did. `training_follows`: its progress lines say so.
PretrainingReport pretrain_and_save(const RetrievalApp& app, const RunConfig& config, const RunFiles& files,
                                    const data::Tokenizer& tokenizer, const data::RetrievalDataset& dataset,
                                    nn::EmbeddingModel& model, bool training_follows) {
    fmt::print("pretraining on the corpus ({} passages): imitating BM25 ({}) on pseudo-queries\n",
               dataset.passages.size(), eval::lexical_tokens_name(app.bm25_variants.back()));
    std::fflush(stdout);
    // Training's steps in pretraining steps, by the rows each encodes (a training step's batch
    // against a pretraining step's pseudo-queries): the run ETA on pretraining's lines.
    const double training_in_pretraining_steps =
        training_follows ? static_cast<double>(config.max_steps) * static_cast<double>(config.batch_size) /
                               static_cast<double>(std::max<int64_t>(1, config.pretrain_batch_size))
                         : 0.0;
    PretrainingReport report = pretrain_text_encoder(model, tokenizer, dataset.passages, app.bm25_variants.back(),
                                                     app.chunk_overlap, config, files.pretrain_log,
                                                     pretraining_step_limit(config),
                                                     training_follows ? "pretraining (training follows)" : "",
                                                     training_in_pretraining_steps);
    save_run_model(files.pretrained, model, tokenizer, {{"pretraining", "imitating BM25 on the corpus"}});
    fmt::print("pretrained {} steps on {} windows in {:.1f} s (last loss {:.4f}); on {} fresh pseudo-queries the source "
               "window is BM25's top 1 for {:.2f} of them and the model's for {:.2f}\n",
               report.steps, report.windows, report.seconds, report.last_loss, 200, report.teacher_top1,
               report.model_top1);
    std::fflush(stdout);
    return report;
}

// The validation split read as evaluation reads it (passages in windows for chunked apps),
// with the terms' share of the score that ranks it best (term_share.h), the model left as it
// is. The trainer keeps its best step by the same measure, so the start, every evaluated step
// and the model finally kept are compared as the end of the run reads them.
TermShareChoice validation_term_share(const RetrievalApp& app, const RunConfig& config,
                                      const data::Tokenizer& tokenizer, nn::EmbeddingModel& model,
                                      const data::RetrievalDataset& validation) {
    if (validation.queries.empty()) return {};
    const nn::ModelConfig& model_config = model.config();
    Tensor queries = encode_texts(model, tokenizer, with_prompt(model_config.query_prompt, query_texts_of(validation)),
                                  config.max_query_length, config.encode_batch_size);
    std::vector<PassageChunk> chunks;
    std::vector<std::string> texts = passage_texts_of(validation);
    if (app.chunked_passages) {
        int64_t window = passage_window(tokenizer, model_config.passage_prompt, config.max_passage_length, app.chunk_overlap);
        chunks = chunk_passages(validation.passages, tokenizer, window, app.chunk_overlap);
        texts.clear();
        for (const PassageChunk& chunk : chunks) texts.push_back(chunk.text);
    }
    Tensor rows = encode_texts(model, tokenizer, with_prompt(model_config.passage_prompt, texts), config.max_passage_length,
                               config.encode_batch_size);
    RankRows rank = [&](const Tensor& q, const Tensor& p) {
        return app.chunked_passages ? window_rankings(q, p, chunks, config.candidate_depth)
                                    : eval::dense_rankings(q, p, config.candidate_depth);
    };
    eval::RelevantSets relevant = eval::relevant_sets(validation);
    return best_term_share(model, queries, rows, rank, relevant);
}

}  // namespace

RunOutcome evaluate_on_split(const RetrievalApp& app, const RunConfig& config, const data::Tokenizer& tokenizer,
                             nn::EmbeddingModel* untrained, const std::string& untrained_row,
                             nn::EmbeddingModel& model, const std::string& model_row,
                             const data::RetrievalDataset& validation, const data::RetrievalDataset& test,
                             nn::EmbeddingModel* pretrained) {
    RunOutcome outcome;
    outcome.table.title = fmt::format("nce {}: {}, {} queries over {} passages", app.name,
                                      app.test_split_name ? app.test_split_name(config) : "test split",
                                      test.queries.size(), test.passages.size());
    outcome.table.columns = standard_columns(app.with_rank_at_k);
    // Every row's intervals from the run's seed: the same resampled queries for every ranker.
    outcome.table.bootstrap = {1000, config.seed, 0.95};
    const std::vector<std::string>& columns = outcome.table.columns;
    const eval::BootstrapOptions& bootstrap = outcome.table.bootstrap;
    eval::RelevantSets test_relevant = eval::relevant_sets(test), validation_relevant = eval::relevant_sets(validation);
    std::vector<std::string> test_queries = query_texts_of(test), test_passages = passage_texts_of(test);
    std::vector<std::string> validation_queries = query_texts_of(validation),
                             validation_passages = passage_texts_of(validation);
    eval::Bm25Parameters bm25{config.bm25_k1, config.bm25_b};
    const DenseRanker ranker(config, tokenizer, app.chunked_passages, app.chunk_overlap);

    if (untrained)
        outcome.table.rows.push_back(
            score_rankings(untrained_row, ranker.rank(*untrained, test), test_relevant, columns, bootstrap));
    // Every BM25 variant on test; the one best on validation is the hybrid's lexical side.
    eval::LexicalTokens best_tokens = app.bm25_variants.front();
    double best_validation = -1;
    eval::RankedLists best_test_lexical, best_validation_lexical;
    for (eval::LexicalTokens tokens : app.bm25_variants) {
        eval::RankedLists on_test = eval::bm25_rankings(test_queries, test_passages, tokens, bm25, config.candidate_depth);
        outcome.table.rows.push_back(
            score_rankings(bm25_row_name(tokens), on_test, test_relevant, columns, bootstrap));
        eval::RankedLists on_validation =
            eval::bm25_rankings(validation_queries, validation_passages, tokens, bm25, config.candidate_depth);
        double mrr = eval::retrieval_metrics(on_validation.passages, validation_relevant, {10}).at(10).mrr;
        if (mrr > best_validation) {
            best_validation = mrr;
            best_tokens = tokens;
            best_test_lexical = std::move(on_test);
            best_validation_lexical = std::move(on_validation);
        }
    }
    if (pretrained)
        outcome.table.rows.push_back(score_rankings("pretrained model (imitates BM25)", ranker.rank(*pretrained, test),
                                                    test_relevant, columns, bootstrap));
    DenseRanker::Counts test_counts;
    eval::RankedLists model_test = ranker.rank(model, test, &test_counts);
    outcome.test_queries = test_counts.queries;
    outcome.test_passages = test_counts.passages;
    outcome.test_passages_in_chunks = test_counts.passages_in_windows;
    outcome.table.rows.push_back(score_rankings(model_row, model_test, test_relevant, columns, bootstrap));
    if (pretrained)
        outcome.table.rows.push_back(score_rankings(fmt::format("pretrained (+) {} (one vector)", model_row),
                                                    ranker.rank({pretrained, &model}, test),
                                                    test_relevant, columns, bootstrap));
    eval::RankedLists model_validation = ranker.rank(model, validation);
    outcome.fusion = eval::choose_fusion_weight(best_validation_lexical, model_validation, validation_relevant);
    outcome.table.rows.push_back(
        score_rankings(fmt::format("hybrid (BM25 {} + {})", eval::lexical_tokens_name(best_tokens), model_row),
                       eval::fuse_rankings(best_test_lexical, model_test, outcome.fusion.dense_weight), test_relevant,
                       columns, bootstrap));
    // Every row but BM25's against the BM25 variant the hybrid fuses, on the app's metric.
    std::set<std::string> bm25_rows;
    for (eval::LexicalTokens tokens : app.bm25_variants) bm25_rows.insert(bm25_row_name(tokens));
    std::vector<std::string> tested_rows;
    for (const MetricRow& row : outcome.table.rows)
        if (bm25_rows.count(row.name) == 0) tested_rows.push_back(row.name);
    outcome.against_bm25 = mark_rows_against_baseline(outcome.table, bm25_row_name(best_tokens), tested_rows,
                                                      app.tested_metric, kSignificanceLevel, bootstrap);
    return outcome;
}

RunOutcome run_train(const RetrievalApp& app, const RunConfig& given_config) {
    // Under `mpirun -np K` every process runs this; only rank 0 writes the run's folder, the
    // others write what they must into a scratch folder of their own (distributed/).
    distributed::RankOutputFolder output(given_config.output);
    RunConfig config = given_config;
    config.output = output.path();
    auto start = Clock::now();
    check_output_folder(config.output);  // never into a folder of the user's own files
    RunFiles files(config.output);
    NewFolderGuard new_folder(config.output);
    // Data first: bad data stops the run before it writes anything of its own.
    data::RetrievalDataset dataset = load_checked(app, config);
    data::DatasetSplits splits = split_for_app(app, dataset, config);
    fmt::print("nce {}: {} queries, {} passages -> train {}/{}, validation {}/{}, test {}/{} (queries/passages, split "
               "by group)\n",
               app.name, dataset.queries.size(), dataset.passages.size(), splits.train.queries.size(),
               splits.train.passages.size(), splits.validation.queries.size(), splits.validation.passages.size(),
               splits.test.queries.size(), splits.test.passages.size());

    // A bad setting found from here until training starts (a vocabulary larger than the text
    // allows, an --init of another size, a corpus too small to pretrain on) removes the
    // folder again (new_folder). The run's config.json is written once the tokenizer exists.
    create_output_folder(config.output);
    write_split_ids(files.split, splits);
    ModelSource source(config.init);
    data::Tokenizer tokenizer = sized_run_tokenizer(app, config, source, splits, files);
    const bool fine_tuning = source.is_folder();
    if (fine_tuning) {
        std::string settings =
            use_fine_tuning_defaults(config, source, app, static_cast<int64_t>(splits.train.queries.size()));
        config.pretrain_steps = 0;
        fmt::print("fine-tuning {}: {}; no corpus pretraining\n", config.init, settings);
    }
    write_run_config(files.config, config);
    print_tokenizer(tokenizer, config, source, files);
    std::fflush(stdout);

    // The first row: a fresh model, or the pretrained one as it came (zero-shot).
    std::unique_ptr<nn::EmbeddingModel> untrained =
        to_run_device(fine_tuning ? source.read_folder_model(config) : make_text_encoder(config, tokenizer.vocab_size()),
                      config.device);
    std::unique_ptr<nn::EmbeddingModel> model, pretrained;
    nlohmann::json facts = split_and_tokenizer_facts(splits, tokenizer);
    if (fine_tuning) check_run_memory(untrained->config(), config);
    facts["prompts"] = prompts_fact(*untrained);
    facts["model"] = nlohmann::json::parse(nn::config_to_json(untrained->config()));  // for the model card
    if (!source.fresh()) {
        if (fine_tuning) print_folder_notes(source);
        model = fine_tuning ? copied_model(*untrained)  // the same weights, trained apart
                            : to_run_device(load_init_checkpoint(config, source, tokenizer.vocab_size()), config.device);
        fmt::print("starting from {} (no corpus pretraining)\n", config.init);
        print_plan(app, config, tokenizer, dataset, splits, *model, false);
        facts["init"] = config.init;
    } else {
        model = to_run_device(make_text_encoder(config, tokenizer.vocab_size()), config.device);
        print_plan(app, config, tokenizer, dataset, splits, *model, config.pretrain_steps != 0);
        if (config.pretrain_steps != 0) {
            facts["pretraining"] = pretraining_facts(
                pretrain_and_save(app, config, files, tokenizer, dataset, *model, /*training_follows=*/true));
            pretrained = to_run_device(load_text_encoder(files.pretrained), config.device);
        }
    }

    data::RetrievalDataset train = splits.train;
    if (config.bm25_negatives > 0) {
        MinedNegatives mined = add_bm25_negatives(train, config.bm25_negatives, app.bm25_variants.back(),
                                                  eval::Bm25Parameters{config.bm25_k1, config.bm25_b});
        fmt::print("BM25 hard negatives ({}): {} for {} training questions ({} got fewer than {})\n",
                   eval::lexical_tokens_name(app.bm25_variants.back()), mined.negatives, mined.questions,
                   mined.short_rankings, config.bm25_negatives);
        facts["bm25_negatives"] = {{"per_question", config.bm25_negatives}, {"added", mined.negatives},
                                   {"questions_short", mined.short_rankings}};
    }
    // Long passages: each query trains on the window that holds its answer (training_windows.h).
    if (app.chunked_passages) {
        int64_t window = passage_window(tokenizer, model->config().passage_prompt, config.max_passage_length,
                                        app.chunk_overlap);  // room for the passage prompt
        TrainingWindows windows = training_windows(train, tokenizer, window, app.chunk_overlap);
        fmt::print("training windows: {} of {} training passages are longer than {} tokens; {} of {} positives moved off "
                   "the first window ({} placed by the answer's position, {} by words shared with the query)\n",
                   windows.passages_split, splits.train.passages.size(), window, windows.moved,
                   windows.positives, windows.placed_by_answer, windows.placed_by_words);
        facts["training_windows"] = {{"passages_split", windows.passages_split},
                                     {"positives", windows.positives},
                                     {"moved_off_first_window", windows.moved},
                                     {"placed_by_answer", windows.placed_by_answer},
                                     {"placed_by_words", windows.placed_by_words}};
        train = std::move(windows.dataset);
    }
    fmt::print("training a {} (d_model {}, {} layers) with {} for {} steps of {} rows on {} threads\n",
               model->config().kind, model->config().d_model, model->config().num_layers, config.loss, config.max_steps,
               config.batch_size, num_threads());
    if (const std::string blas_note = blas_core_mismatch(); !blas_note.empty() && config.device == Device::CPU) {
        fmt::print("note: {}\n", blas_note);
        facts["blas_core_mismatch"] = blas_note;
    }
    std::fflush(stdout);
    new_folder.keep();  // from here on a failure names the last good checkpoint, which must stay
    ValidationScore validation_score = [&](nn::EmbeddingModel& scored) {
        return validation_term_share(app, config, tokenizer, scored, splits.validation).mrr;
    };
    TrainingReport training = train_text_encoder(*model, tokenizer, train, splits.validation, config, files,
                                                 /*start_is_a_candidate=*/true, validation_score);
    fmt::print("trained {} steps in {:.1f} s (last loss {:.4f}, {})\n", training.result.steps, training.seconds,
               training.result.last_loss,
               training.result.best_metric ? fmt::format("best validation MRR@10 {:.3f}", *training.result.best_metric)
                                           : std::string("no validation: the last step's model is kept"));
    if (training.best_step == 0)
        fmt::print("no training step beat the {} model on validation: the model kept is the start, unchanged\n",
                   pretrained ? "pretrained" : "starting");
    if (training.best_step == 0 && pretrained)
        facts["kept_pretrained"] = {{"validation_mrr10", training.result.best_metric.value_or(0.0)}};
    print_truncation("training queries", training.queries, config.max_query_length);
    if (!app.chunked_passages) print_truncation("training passages", training.passages, config.max_passage_length);
    std::fflush(stdout);
    if (!distributed::is_main_rank()) {  // rank 0 evaluates and reports
        RunOutcome trained_only;
        trained_only.training = training;
        return trained_only;
    }

    // The model kept at the terms' share of the score that ranks validation best (term_share.h).
    TermShareChoice share = validation_term_share(app, config, tokenizer, *model, splits.validation);
    set_term_share(*model, share);
    if (share.chosen) {
        fmt::print("term share: the terms' part weighs {:.3f} of the score, chosen on validation MRR@10 {:.3f} (as "
                   "learned {:.3f}: {:.3f})\n", share.share, share.mrr, share.learned_share, share.learned_mrr);
        facts["term_share"] = term_share_fact(share);
        save_run_model(files.model, *model, tokenizer,
                       {{"loss", training.best_step == 0 && pretrained ? "none (no step beat the pretrained model)"
                                                                       : config.loss}});
    }
    RunOutcome outcome = evaluate_on_split(app, config, tokenizer, untrained.get(),
                                           fine_tuning ? "pretrained, zero-shot" : "untrained model", *model,
                                           fine_tuning ? "pretrained, fine-tuned" : "trained model",
                                           splits.validation, splits.test, pretrained.get());
    if (fine_tuning) {  // for the ecosystem: SentenceTransformer(path) loads it
        fs::path folder = sentence_transformers_folder(config.output);
        fs::remove_all(folder);
        source.save_fine_tuned(folder.string(), *model);
        fmt::print("sentence-transformers folder: {}\n", folder.string());
    }
    outcome.training = training;
    outcome.seconds = seconds_since(start);
    report(app, config, files, outcome, facts, true);
    return outcome;
}

// Corpus pretraining: from a fresh model, or, with --init FOLDER, from a pretrained model
// that then adapts to the corpus (the same pseudo-queries, its own tokenizer, the fine-tuning
// learning rate), written back as a sentence-transformers folder to fine-tune from.
RunOutcome run_pretrain(const RetrievalApp& app, const RunConfig& given_config) {
    RunConfig config = given_config;
    ModelSource source(config.init);
    const bool adapting = source.is_folder();
    NCE_CHECK(config.init.empty() || adapting, "pretrain: --init {} is no pretrained model folder (modules.json or "
              "config.json with model.safetensors); corpus pretraining starts from a fresh model or from such a "
              "folder", config.init);
    NCE_CHECK(config.pretrain_steps != 0, "pretrain: --no-pretrain or --pretrain-steps 0 leaves nothing to do; give a "
              "step count or -1 (sized to the corpus)");
    auto start = Clock::now();
    check_output_folder(config.output);
    RunFiles files(config.output);
    NewFolderGuard new_folder(config.output);
    data::RetrievalDataset dataset = load_checked(app, config);
    data::DatasetSplits splits = split_for_app(app, dataset, config);
    create_output_folder(config.output);
    data::Tokenizer tokenizer = sized_run_tokenizer(app, config, source, splits, files);
    if (adapting) {  // warmup is pretraining's own (a tenth of its steps)
        if (config.chosen.count("learning_rate") == 0) config.learning_rate = kFineTuningLearningRate;
        use_model_dropout(config, source);
        fmt::print("adapting {} to the corpus: learning rate {:g} (--learning-rate); lengths within its max_seq_length "
                   "(queries {}, passages {} tokens)\n", config.init, config.learning_rate, config.max_query_length,
                   config.max_passage_length);
    }
    write_run_config(files.config, config);
    print_tokenizer(tokenizer, config, source, files);
    std::unique_ptr<nn::EmbeddingModel> start_model =
        to_run_device(adapting ? source.read_folder_model(config) : make_text_encoder(config, tokenizer.vocab_size()),
                      config.device);
    if (adapting) print_folder_notes(source);
    std::unique_ptr<nn::EmbeddingModel> model =
        adapting ? copied_model(*start_model) : to_run_device(make_text_encoder(config, tokenizer.vocab_size()), config.device);
    nlohmann::json facts = split_and_tokenizer_facts(splits, tokenizer);
    facts["pretraining"] = pretraining_facts(
        pretrain_and_save(app, config, files, tokenizer, dataset, *model, /*training_follows=*/false));
    facts["prompts"] = prompts_fact(*model);
    if (adapting) facts["init"] = config.init;
    new_folder.keep();
    RunOutcome outcome = evaluate_on_split(app, config, tokenizer, start_model.get(),
                                           adapting ? "pretrained, zero-shot" : "untrained model",
                                           *model, adapting ? "pretrained, adapted (imitates BM25)"
                                                            : "pretrained model (imitates BM25)",
                                           splits.validation, splits.test);
    std::string fine_tune_from = files.pretrained;
    if (adapting) {  // a model folder again, with its tokenizer: what --init and the ecosystem read
        fs::path folder = sentence_transformers_folder(config.output);
        fs::remove_all(folder);
        source.save_fine_tuned(folder.string(), *model);
        fmt::print("sentence-transformers folder: {}\n", folder.string());
        fine_tune_from = folder.string();
    }
    outcome.seconds = seconds_since(start);
    report(app, config, files, outcome, facts, false);
    fmt::print("fine-tune from it: nce {} train --init {}\n", app.name, fine_tune_from);
    return outcome;
}

namespace {

// A model to evaluate: an nce checkpoint file, or a model folder (sentence-transformers or a
// bare Hugging Face encoder), which reads with its own tokenizer.
std::unique_ptr<nn::EmbeddingModel> load_evaluated_model(const std::string& path, const RunConfig& config) {
    return is_model_folder(path) ? load_pretrained_folder(path, config, /*print_notes=*/false) : load_text_encoder(path);
}

}  // namespace

RunOutcome run_eval(const RetrievalApp& app, const RunConfig& config, const std::string& checkpoint_path,
                    const PromptOverride& prompts, const std::string& versus) {
    auto start = Clock::now();
    check_output_folder(config.output);
    RunFiles files(config.output);
    std::string checkpoint = checkpoint_path.empty() ? files.model : checkpoint_path;
    std::unique_ptr<nn::EmbeddingModel> model = to_run_device(load_evaluated_model(checkpoint, config), config.device);
    {
        const nn::ModelConfig& saved = model->config();
        std::string query_prompt = prompts.query_prompt.value_or(saved.query_prompt);
        std::string passage_prompt = prompts.passage_prompt.value_or(saved.passage_prompt);
        if (query_prompt != saved.query_prompt || passage_prompt != saved.passage_prompt)
            fmt::print("eval: {} was saved with the query prompt \"{}\" and the passage prompt \"{}\"; evaluating it "
                       "with \"{}\" and \"{}\" as given\n", checkpoint, saved.query_prompt, saved.passage_prompt,
                       query_prompt, passage_prompt);
        model = with_model_prompts(std::move(model), query_prompt, passage_prompt);
    }
    data::Tokenizer tokenizer =
        is_model_folder(checkpoint) ? data::Tokenizer::load(checkpoint) : tokenizer_for(checkpoint, files);
    check_tokenizer_matches(tokenizer, *model, checkpoint);
    // --versus: a second model, scored on the same test queries and passages, and the paired
    // test of the two. It reads with its own tokenizer (a folder's, or the one beside its
    // checkpoint), at the run's lengths within its own max_len: a fine-tuned pretrained model
    // against one trained from scratch, or two fine-tunings.
    std::unique_ptr<nn::EmbeddingModel> other;
    std::optional<data::Tokenizer> other_tokenizer;
    if (!versus.empty()) {
        other = to_run_device(load_evaluated_model(versus, config), config.device);
        other_tokenizer = is_model_folder(versus) ? data::Tokenizer::load(versus) : tokenizer_for(versus, files);
        check_tokenizer_matches(*other_tokenizer, *other, versus);
    }
    RunConfig fitted = fitted_to(config, *model);
    data::RetrievalDataset dataset = load_checked(app, fitted);
    data::DatasetSplits splits = split_for_app(app, dataset, fitted);
    create_output_folder(config.output);
    // The first row: the pretrained model the run fine-tuned, as it came; else a fresh one.
    const bool fine_tuned = is_model_folder(fitted.init);
    Generator generator(config.seed);
    std::unique_ptr<nn::EmbeddingModel> untrained =
        to_run_device(fine_tuned ? load_pretrained_folder(fitted.init, fitted, /*print_notes=*/false)
                                 : nn::make_model(model->config(), generator), config.device);
    // The run's pretrained model, when the checkpoint's folder holds one, gets its row as in train.
    fs::path pretrained_path = fs::path(checkpoint).parent_path() / "pretrained.safetensors";
    std::unique_ptr<nn::EmbeddingModel> pretrained;
    if (fs::is_regular_file(pretrained_path) && !fs::equivalent(pretrained_path, checkpoint)) {
        pretrained = to_run_device(load_text_encoder(pretrained_path.string()), config.device);
        NCE_CHECK(pretrained->config().vocab_size == model->config().vocab_size &&
                      pretrained->config().max_len == model->config().max_len,
                  "{}: it does not match {} beside it (another run's file?); move it away", pretrained_path.string(),
                  checkpoint);
    }
    const std::string model_row = fine_tuned ? "pretrained, fine-tuned" : "trained model";
    RunOutcome outcome = evaluate_on_split(app, fitted, tokenizer, untrained.get(),
                                           fine_tuned ? "pretrained, zero-shot" : "untrained model", *model, model_row,
                                           splits.validation, splits.test, pretrained.get());
    nlohmann::json facts = {{"split", split_sizes(splits)}, {"checkpoint", checkpoint}, {"prompts", prompts_fact(*model)}};
    std::string versus_line;
    if (other) {
        const std::string other_row = "versus " + versus;
        RunOutcome other_outcome = evaluate_on_split(app, fitted_to(config, *other), *other_tokenizer, nullptr, "",
                                                     *other, other_row, splits.validation, splits.test);
        outcome.table.rows.push_back(other_outcome.table.row(other_row));  // marked against the same BM25
        const std::string& metric = app.tested_metric;
        eval::PairedBootstrapTest test =
            eval::paired_bootstrap_test(per_query_values(outcome.table, model_row, metric),
                                        per_query_values(outcome.table, other_row, metric), outcome.table.bootstrap);
        versus_line = fmt::format(
            "{} minus {} on {}: {:+.3f} [{:+.3f}, {:+.3f}] {} (paired bootstrap over the test queries; {})\n",
            model_row, other_row, metric, test.difference, test.low, test.high,
            significance_mark(test, kSignificanceLevel, outcome.table.bootstrap.resamples),
            test.significant(kSignificanceLevel) ? (test.difference > 0 ? "above it beyond the noise"
                                                                         : "below it beyond the noise")
                                                 : "no difference the test queries can show");
        facts["versus"] = {{"model", versus}, {"row", other_row}, {"metric", metric},
                           {"test", paired_test_to_json(test, kSignificanceLevel)}};
    }
    outcome.seconds = seconds_since(start);
    report(app, fitted, files, outcome, facts, false);
    fmt::print("{}", versus_line);
    return outcome;
}

void require_run_device(const RunConfig& config) {
    if (require_device(device_name(config.device)) == Device::CPU) return;
    NCE_CHECK(distributed::world().size() == 1, "--device cuda: the retrieval runs use the GPU from one process; "
              "start it without mpirun");
}

void run_index(const RetrievalApp& app, const RunConfig& config, const std::string& checkpoint_path,
               const std::string& index_folder) {
    RunFiles files(config.output);
    std::string checkpoint = checkpoint_path.empty() ? files.model : checkpoint_path;
    std::unique_ptr<nn::EmbeddingModel> model = to_run_device(load_text_encoder(checkpoint), config.device);
    data::Tokenizer tokenizer = tokenizer_for(checkpoint, files);
    check_tokenizer_matches(tokenizer, *model, checkpoint);
    RunConfig fitted = fitted_to(config, *model);
    data::RetrievalDataset dataset = load_checked(app, fitted);
    std::string folder = index_folder.empty() ? files.index : index_folder;
    IndexSummary summary = build_passage_index(folder, *model, tokenizer, dataset.passages, fitted, app.chunk_overlap,
                                               checkpoint, tokenizer.model_path(), app.bm25_variants.back(),
                                               run_dense_weight(files, checkpoint));
    fmt::print("indexed {} passages as {} chunks ({} passages longer than {} tokens were split with {} tokens of "
               "overlap) into {} in {:.1f} s\n",
               summary.passages, summary.chunks, summary.passages_split, fitted.max_passage_length, app.chunk_overlap,
               folder, summary.seconds);
}

}  // namespace nce::retrieval
