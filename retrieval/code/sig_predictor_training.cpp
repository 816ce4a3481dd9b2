#include "retrieval/code/sig_predictor_training.h"

#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <map>

#include "eval/rankings.h"
#include "retrieval/report/svg_charts.h"
#include "retrieval/train/training.h"
#include "data/split.h"
#include "losses/losses.h"
#include "nn/checkpoint.h"
#include "nn/optimizer.h"

namespace nce::code {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Row indices of the features on each side of a split by group.
struct RowSplit {
    std::vector<int64_t> train, validation, test;
};

// Splits the rows as data::split_by_group splits a data set: one query and one passage per
// row, grouped by groups[row]; the rows come back through the ids.
RowSplit split_rows(const TeacherFeatures& features, const retrieval::RunConfig& config) {
    data::RetrievalDataset rows;
    rows.name = features.folder;
    for (int64_t i = 0; i < features.rows(); ++i) {
        std::string id = std::to_string(i), group = std::to_string(features.groups[static_cast<size_t>(i)]);
        rows.queries.push_back({id, "", group});
        rows.passages.push_back({id, "", group});
        rows.relevance.push_back({i, i, 1.0, 0, false});
    }
    data::DatasetSplits splits = data::split_by_group(rows, config.validation_fraction, config.test_fraction, config.seed);
    auto row_numbers = [](const data::RetrievalDataset& side) {
        std::vector<int64_t> numbers;
        for (const data::Query& query : side.queries) numbers.push_back(std::stoll(query.id));
        return numbers;
    };
    RowSplit result{row_numbers(splits.train), row_numbers(splits.validation), row_numbers(splits.test)};
    NCE_CHECK(result.train.size() >= 2 && !result.validation.empty() && !result.test.empty(),
              "features folder {}: {} functions in {} split into train {}, validation {}, test {}; each side needs "
              "functions (and train two): give more functions or groups, or change --validation-fraction / "
              "--test-fraction",
              features.folder, features.rows(), "groups", result.train.size(), result.validation.size(),
              result.test.size());
    return result;
}

Tensor rows_of(const Tensor& table, const std::vector<int64_t>& rows) {
    return index_select(table, Tensor::from_indices(rows, {static_cast<int64_t>(rows.size())}));
}

// The sig_predictor's embeddings of the given rows, in eval mode without a graph: [rows, out_dim].
Tensor embed_rows(nn::EmbeddingModel& model, const TeacherFeatures& features, const std::vector<int64_t>& rows,
                  int64_t batch_size) {
    model.train(false);
    NoGradGuard no_grad;
    std::vector<Tensor> parts;
    for (size_t start = 0; start < rows.size(); start += static_cast<size_t>(batch_size)) {
        std::vector<int64_t> batch(rows.begin() + static_cast<std::ptrdiff_t>(start),
                                   rows.begin() + static_cast<std::ptrdiff_t>(std::min(rows.size(), start + batch_size)));
        parts.push_back(
            model.encode(rows_of(features.signature_features, batch), rows_of(features.signature_mask, batch), nullptr)
                .value());
    }
    return concat(parts, 0);
}

// Each query row's relevant passage: its own row, as an index into `corpus_rows`.
eval::RelevantSets relevant_rows(const std::vector<int64_t>& query_rows, const std::vector<int64_t>& corpus_rows) {
    std::map<int64_t, int64_t> position;
    for (size_t i = 0; i < corpus_rows.size(); ++i) position[corpus_rows[i]] = static_cast<int64_t>(i);
    eval::RelevantSets relevant;
    for (int64_t row : query_rows) relevant.push_back({position.at(row)});
    return relevant;
}

}  // namespace

nn::ModelConfig sig_predictor_config(const retrieval::RunConfig& config, const TeacherFeatures& features) {
    nn::ModelConfig model;
    model.kind = "sig_predictor";
    model.in_dim = features.input_dim();
    model.out_dim = features.output_dim();
    model.d_model = config.d_model;
    model.nhead = config.nhead;
    model.dim_feedforward = config.dim_feedforward;
    model.num_layers = config.num_layers;
    model.dropout = config.dropout;
    return nn::validate_config(model);
}

FeatureRunOutcome run_sig_predictor_training(const retrieval::RunConfig& config, const std::string& features_folder) {
    auto start = Clock::now();
    NCE_CHECK(config.loss == "infonce" || config.loss == "infonce_symmetric",
              "features: --loss {} cannot train the sig_predictor against fixed body embeddings; use infonce or "
              "infonce_symmetric", config.loss);
    // Its pair form: q [B, d] against the batch's p [B, d], no extra negatives, at the run's tau.
    const retrieval::RunLoss loss = retrieval::run_loss(config.loss, config.loss_parameters);
    const double tau = loss.parameters.number("tau");
    TeacherFeatures features = read_teacher_features(features_folder);
    RowSplit split = split_rows(features, config);
    nn::ModelConfig model_config = sig_predictor_config(config, features);

    retrieval::RunFiles files(config.output);
    retrieval::create_output_folder(config.output);
    retrieval::write_run_config(files.config, config);
    fmt::print("nce code features: {} functions ({} tokens of {} features -> body embeddings of {}) from {}; train {}, "
               "validation {}, test {} (split by group)\n",
               features.rows(), features.signature_features.size(1), features.input_dim(), features.output_dim(),
               features_folder, split.train.size(), split.validation.size(), split.test.size());

    Generator init(config.seed);
    std::unique_ptr<nn::EmbeddingModel> untrained = nn::make_model(model_config, init);
    Generator same_init(config.seed);
    std::unique_ptr<nn::EmbeddingModel> model = nn::make_model(model_config, same_init);

    // One epoch: the training rows shuffled by a generator seeded from the epoch, in batches.
    auto batch_size = static_cast<size_t>(std::min<int64_t>(config.batch_size, static_cast<int64_t>(split.train.size())));
    int64_t steps_per_epoch = static_cast<int64_t>(split.train.size() / batch_size);
    auto epoch_order = [&](int64_t epoch) {
        std::vector<int64_t> order = split.train;
        Generator shuffle(config.seed * 1000003 + static_cast<uint64_t>(epoch));
        for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[static_cast<size_t>(shuffle.next_index(static_cast<int64_t>(i)))]);
        return order;
    };
    int64_t planned_epoch = 1;
    std::vector<int64_t> order = epoch_order(planned_epoch);

    nn::AdamW optimizer(model->parameters(), retrieval::adam_options(config));
    nn::TrainerOptions options = retrieval::trainer_options(config, files, steps_per_epoch, /*validates=*/true);
    nn::Trainer trainer(*model, optimizer, options);

    auto loss_of = [&](const nn::StepPosition& position, Generator& generator) {
        if (position.epoch != planned_epoch) {
            planned_epoch = position.epoch;
            order = epoch_order(planned_epoch);
        }
        auto first = order.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(position.batch_index) * batch_size);
        std::vector<int64_t> batch(first, first + static_cast<std::ptrdiff_t>(batch_size));
        // q: the predicted embeddings [B, out_dim]; p: the teacher's, fixed [B, out_dim].
        Var q = model->encode(rows_of(features.signature_features, batch), rows_of(features.signature_mask, batch),
                              &generator);
        Var p(rows_of(features.body_embeddings, batch));
        return nn::BatchLoss::with_graph(loss.row.grad_cache_loss(q, p, Var(), loss.parameters),
                                         static_cast<int64_t>(batch.size()));
    };
    Tensor validation_bodies = rows_of(features.body_embeddings, split.validation);
    eval::RelevantSets validation_relevant = relevant_rows(split.validation, split.validation);
    auto evaluate = [&](nn::EmbeddingModel& evaluated) {
        Tensor q = embed_rows(evaluated, features, split.validation, config.encode_batch_size);
        eval::RankedLists ranked = eval::dense_rankings(q, validation_bodies, 10);
        return eval::retrieval_metrics(ranked.passages, validation_relevant, {10}).at(10).mrr;
    };
    fmt::print("training a sig_predictor (d_model {}, {} layers) with {} (tau {}) for {} steps of {} rows\n",
               config.d_model, config.num_layers, config.loss, tau, config.max_steps, batch_size);
    auto training_start = Clock::now();
    FeatureRunOutcome outcome;
    outcome.training = config.evaluate_every > 0 ? trainer.fit(loss_of, evaluate) : trainer.fit(loss_of);
    double training_seconds = std::chrono::duration<double>(Clock::now() - training_start).count();
    if (config.evaluate_every > 0 && fs::exists(files.best_checkpoint))
        nn::restore_training_checkpoint(files.best_checkpoint, *model);
    model->train(false);
    nn::save_model(files.model, *model, {{"loss", config.loss}, {"features", features_folder}});
    fmt::print("trained {} steps in {:.1f} s (last loss {:.4f}, best validation MRR@10 {:.3f})\n",
               outcome.training.steps, training_seconds, outcome.training.last_loss,
               outcome.training.best_metric.value_or(0.0));

    // Test signatures against every body of the folder.
    std::vector<int64_t> all_rows(static_cast<size_t>(features.rows()));
    for (int64_t i = 0; i < features.rows(); ++i) all_rows[static_cast<size_t>(i)] = i;
    eval::RelevantSets test_relevant = relevant_rows(split.test, all_rows);
    outcome.table.title = fmt::format("nce code features: {} test signatures over all {} bodies", split.test.size(),
                                      features.rows());
    outcome.table.columns = retrieval::standard_columns(true);
    outcome.table.bootstrap = {1000, config.seed, 0.95};  // the same resampled signatures for both rows
    for (auto [name, encoder] : {std::pair<const char*, nn::EmbeddingModel*>{"untrained sig_predictor", untrained.get()},
                                 {"trained sig_predictor", model.get()}}) {
        Tensor q = embed_rows(*encoder, features, split.test, config.encode_batch_size);
        eval::RankedLists ranked = eval::dense_rankings(q, features.body_embeddings, config.candidate_depth);
        outcome.table.rows.push_back(retrieval::score_rankings(name, ranked, test_relevant, outcome.table.columns,
                                                               outcome.table.bootstrap));
    }
    outcome.train_rows = static_cast<int64_t>(split.train.size());
    outcome.validation_rows = static_cast<int64_t>(split.validation.size());
    outcome.test_rows = static_cast<int64_t>(split.test.size());
    outcome.seconds = std::chrono::duration<double>(Clock::now() - start).count();

    nlohmann::json extra{{"app", "code features"},
                         {"features", features_folder},
                         {"seed", config.seed},
                         {"gemm_precision", config.gemm_precision},
                         {"model", nlohmann::json::parse(nn::config_to_json(model_config))},
                         {"split", {{"train", outcome.train_rows}, {"validation", outcome.validation_rows},
                                    {"test", outcome.test_rows}, {"corpus", features.rows()}}},
                         {"training", {{"loss", config.loss}, {"tau", tau}, {"steps", outcome.training.steps},
                                       {"last_loss", outcome.training.last_loss},
                                       {"best_validation_mrr@10", outcome.training.best_metric.value_or(-1.0)},
                                       {"seconds", training_seconds}}},
                         {"seconds", outcome.seconds}};
    retrieval::write_results_json(files.results, outcome.table, extra);
    retrieval::write_metric_bars_svg(outcome.table, files.metrics_svg);
    if (fs::exists(files.log))
        retrieval::write_training_curves_svg(files.log, files.curves_svg, "nce code features: training the sig_predictor");
    fmt::print("\n{}\n", retrieval::format_metric_table(outcome.table));
    fmt::print("wrote {} (results.json, metrics.svg, training_curves.svg, model.safetensors, train_log.jsonl) in "
               "{:.1f} s\n", files.output, outcome.seconds);
    return outcome;
}

}  // namespace nce::code
