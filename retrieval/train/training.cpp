// Training a text_encoder on (query, passage) batches with one contrastive loss, through
// nn::Trainer.
#include "retrieval/train/training.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <set>

#include "eval/rankings.h"
#include "retrieval/index/dense_ranker.h"
#include "retrieval/embedding/run_device.h"
#include "retrieval/model/tokenizer_fingerprint.h"
#include "data/batching.h"
#include "distributed/data_parallel.h"
#include "distributed/distributed_losses.h"
#include "distributed/sharding.h"
#include "distributed/world.h"
#include "engine/error.h"
#include "losses/losses.h"
#include "nn/checkpoint.h"
#include "nn/checkpoint_activations.h"
#include "nn/grad_cache.h"
#include "nn/optimizer.h"

namespace nce::retrieval {
namespace {

// The fewest rows a batch needs for the loss (in-batch losses need two); under mpirun every
// process embeds at least one row of each batch.
size_t minimum_rows(const TrainingLoss& loss) {
    return std::max(loss.minimum_rows, static_cast<size_t>(distributed::world().size()));
}

// One epoch's usable batches (seeded by the epoch, so a step's batch depends on its position only).
std::vector<data::Batch> usable_batches(const data::RetrievalDataset& train, const RunConfig& config,
                                        const TrainingLoss& loss, int64_t epoch) {
    data::BatchOptions options;
    options.strategy = loss.strategy;
    options.batch_size = config.batch_size;
    options.seed = config.seed * 1000003 + static_cast<uint64_t>(epoch);
    options.triplet_negatives = config.triplet_negatives;
    options.by_group = config.batch_grouping == "by_group";
    options.drop_last = false;
    std::vector<data::Batch> batches;
    for (data::Batch& batch : data::make_batches(train, options).batches)
        if (batch.rows.size() >= minimum_rows(loss)) batches.push_back(std::move(batch));
    return batches;
}

// hard_negatives[q]: the passages the data marks as not answering query q (a pairs file's
// negative columns; Relevance::hard_negative), in the data's order.
std::vector<std::vector<int64_t>> hard_negatives_by_query(const data::RetrievalDataset& dataset) {
    std::vector<std::vector<int64_t>> negatives(dataset.queries.size());
    for (const data::Relevance& entry : dataset.relevance)
        if (entry.hard_negative) negatives[static_cast<size_t>(entry.query)].push_back(entry.passage);
    return negatives;
}

// Under `mpirun -np K` (distributed/): this process embeds its slice of the batch's rows and
// the distributed loss gathers the other processes' embeddings, so every row of the batch
// is a negative for every other, as on one process; the value is this process's share.
// The in-batch losses infonce and infonce_symmetric run this way. The data's hard negatives
// of the whole batch are one list on every process; each embeds its slice of it, and the
// loss gathers them after every process's positives, as one process stacks [P; negatives].
Var distributed_batch_loss(const BatchContext& context) {
    nn::EmbeddingModel& model = context.model;
    data::Batch local = context.batch;
    local.rows = distributed::local_slice(context.batch.rows);
    Var q = context.embed(as_queries(model, data::query_texts(local, context.train)), context.max_query_length);
    Var p = context.embed(as_passages(model, data::passage_texts(local, context.train)),
                          context.max_passage_length);
    Var negatives;  // undefined on every process when the batch has none
    std::vector<std::string> negative_texts =
        batch_hard_negative_texts(context.batch, context.train, context.hard_negatives);
    if (!negative_texts.empty()) {
        std::vector<std::string> local_negatives = distributed::local_slice(negative_texts);
        negatives = local_negatives.empty()
                        ? Var(Tensor::zeros({0, p.value().size(1)}, p.value().dtype()))  // [0, d]: fewer than processes
                        : context.embed(as_passages(model, std::move(local_negatives)),
                                        context.max_passage_length);
    }
    return context.loss.distributed_loss(q, p, negatives, context.parameters);
}

// GradCache (nn/grad_cache.h): the batch's pair loss, its exact gradient accumulated into the
// parameters mini_batch_size rows at a time; returns the loss.
double grad_cache_batch(const BatchContext& context, int64_t mini_batch_size) {
    nn::EmbeddingModel& model = context.model;
    data::EncodedBatch queries = context.tokenizer.encode(
        as_queries(model, data::query_texts(context.batch, context.train)), context.max_query_length);
    data::EncodedBatch passages = context.tokenizer.encode(
        as_passages(model, data::passage_texts(context.batch, context.train)), context.max_passage_length);
    const Device device = model_device(model);
    nn::PairBatch pairs{queries.ids.to(device), queries.mask.to(device), passages.ids.to(device),
                        passages.mask.to(device)};
    nn::EmbeddingLoss loss = [&](const Var& q, const Var& p, const Var&) {
        return context.loss.grad_cache_loss(q, p, Var(), context.parameters);
    };
    return nn::grad_cache_step(model, model, pairs, loss, mini_batch_size, context.generator);
}

}  // namespace

nn::AdamWOptions adam_options(const RunConfig& config) {
    nn::AdamWOptions adam;
    adam.learning_rate = config.learning_rate;
    adam.weight_decay = config.weight_decay;
    return adam;
}

nn::TrainerOptions trainer_options(const RunConfig& config, const RunFiles& files, int64_t steps_per_epoch,
                                   bool validates) {
    nn::TrainerOptions options;
    options.epochs = config.epochs;
    options.steps_per_epoch = steps_per_epoch;
    options.max_steps = config.max_steps;
    options.seed = config.seed;
    nn::LearningRateSchedule schedule;
    schedule.kind = config.schedule;
    schedule.base_learning_rate = config.learning_rate;
    schedule.warmup_steps = config.warmup_steps;
    schedule.total_steps = config.max_steps;
    options.schedule = schedule;
    options.max_grad_norm = config.max_grad_norm;
    options.evaluate_every = validates ? config.evaluate_every : 0;
    options.patience = config.patience;
    options.best_checkpoint_path = options.evaluate_every > 0 ? files.best_checkpoint : "";
    options.last_checkpoint_path = files.last_checkpoint;
    options.metrics_log_path = files.log;
    return options;
}

TrainingReport train_text_encoder(nn::EmbeddingModel& model, const data::Tokenizer& tokenizer,
                                  const data::RetrievalDataset& train, const data::RetrievalDataset& validation,
                                  const RunConfig& config, const RunFiles& files, bool start_is_a_candidate,
                                  const ValidationScore& score) {
    const RunLoss run = run_loss(config.loss, config.loss_parameters);  // the loss's row and parameters, once
    const TrainingLoss& loss = run.row;
    nn::set_checkpoint_activations(model, config.checkpoint_activations);
    const std::vector<std::vector<int64_t>> hard_negatives = hard_negatives_by_query(train);
    // What runs on one process only, checked once before the first step.
    const bool marks_hard_negatives =
        std::any_of(hard_negatives.begin(), hard_negatives.end(), [](const auto& list) { return !list.empty(); });
    const bool several_processes = distributed::world().size() > 1;
    NCE_CHECK(!several_processes || loss.distributed_loss, "training: loss {} does not run on several processes; use "
              "infonce or infonce_symmetric, or run one process", config.loss);
    NCE_CHECK(!several_processes || config.mini_batch_size == 0, "training: --mini-batch-size (GradCache) runs on one "
              "process; under mpirun each process already embeds only its slice of the batch: drop it");
    NCE_CHECK(config.mini_batch_size == 0 || !marks_hard_negatives, "training: --mini-batch-size (GradCache) caches "
              "queries and positives only, and the data marks hard negatives; drop --mini-batch-size or the negative "
              "columns");
    if (loss.check_data) loss.check_data(train);
    TrainingReport report;
    // Counted as the model reads them, prompts included.
    std::vector<std::string> train_queries = as_queries(model, query_texts_of(train)),
                             train_passages = as_passages(model, passage_texts_of(train));
    report.queries = {static_cast<int64_t>(train_queries.size()),
                      count_truncated(tokenizer, train_queries, config.max_query_length)};
    report.passages = {static_cast<int64_t>(train_passages.size()),
                       count_truncated(tokenizer, train_passages, config.max_passage_length)};

    // One epoch's batches at a time; a step's batch is a function of (epoch, batch index).
    int64_t planned_epoch = 1;
    std::vector<data::Batch> batches = usable_batches(train, config, loss, planned_epoch);
    NCE_CHECK(!batches.empty(), "training: the training split ({} queries) gives no batch of at least {} rows for loss "
              "{}; use more data or another loss", train.queries.size(), minimum_rows(loss), config.loss);
    report.batches_per_epoch = static_cast<int64_t>(batches.size());

    nn::AdamW optimizer(model.parameters(), adam_options(config));
    if (distributed::world().size() > 1) distributed::broadcast_parameters(model);  // rank 0's weights everywhere

    nn::TrainerOptions options =
        trainer_options(config, files, report.batches_per_epoch, /*validates=*/!validation.queries.empty());
    options.evaluate_start = start_is_a_candidate;
    // Under mpirun only rank 0 shows progress and writes the log and checkpoints.
    nn::Trainer trainer(model, optimizer, distributed::options_for_this_rank(options));

    auto loss_of = [&](const nn::StepPosition& position, Generator& generator) {
        if (position.epoch != planned_epoch) {
            planned_epoch = position.epoch;
            batches = usable_batches(train, config, loss, planned_epoch);
            NCE_CHECK(!batches.empty(), "training: epoch {} has no usable batch", planned_epoch);
        }
        const data::Batch& batch = batches[static_cast<size_t>(position.batch_index) % batches.size()];
        const BatchContext context{loss,           model, tokenizer, batch, train, hard_negatives, config.max_query_length,
                                   config.max_passage_length, run.parameters, generator};
        const int64_t rows = static_cast<int64_t>(batch.rows.size());
        if (config.mini_batch_size > 0) return nn::BatchLoss::gradients_ready(grad_cache_batch(context, config.mini_batch_size), rows);
        Var value = distributed::world().size() > 1 ? distributed_batch_loss(context) : loss.batch_loss(context);
        return nn::BatchLoss::with_graph(value, rows);
    };
    eval::RelevantSets validation_relevant;
    std::vector<std::string> validation_queries, validation_passages;
    if (options.evaluate_every > 0 && !score) {
        validation_relevant = eval::relevant_sets(validation);
        validation_queries = as_queries(model, query_texts_of(validation));
        validation_passages = as_passages(model, passage_texts_of(validation));
    }
    auto evaluate = [&](nn::EmbeddingModel& evaluated) {
        if (score) return score(evaluated);
        Tensor q = encode_texts(evaluated, tokenizer, validation_queries, config.max_query_length, config.encode_batch_size);
        Tensor p = encode_texts(evaluated, tokenizer, validation_passages, config.max_passage_length,
                                config.encode_batch_size);
        eval::RankedLists ranked = eval::dense_rankings(q, p, 10);
        return eval::retrieval_metrics(ranked.passages, validation_relevant, {10}).at(10).mrr;
    };

    auto start = std::chrono::steady_clock::now();
    if (distributed::world().size() > 1) {
        // Gradients summed over the processes each step; rank 0 evaluates and shares its score.
        nn::BatchLossFunction data_parallel = distributed::data_parallel_loss(loss_of, model);
        report.result = options.evaluate_every > 0
                            ? trainer.fit(data_parallel, distributed::evaluate_on_main_rank(evaluate))
                            : trainer.fit(data_parallel);
    } else {
        report.result = options.evaluate_every > 0 ? trainer.fit(loss_of, evaluate) : trainer.fit(loss_of);
    }
    report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    // Keep the best evaluated parameters (the trainer saved them), else the last ones.
    if (options.evaluate_every > 0 && std::filesystem::exists(files.best_checkpoint))
        report.best_step = nn::restore_training_checkpoint(files.best_checkpoint, model).step;
    model.train(false);
    save_run_model(files.model, model, tokenizer, {{"loss", config.loss}});
    return report;
}

}  // namespace nce::retrieval
