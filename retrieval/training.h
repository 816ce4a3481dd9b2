// Training a text_encoder on a split's (query, passage) pairs with one contrastive loss,
// through nn::Trainer (AdamW, warmup + schedule, gradient clipping, JSON-lines log, best and
// last training checkpoints, early stopping on validation MRR@10).
//
// Each loss takes the batches it needs (data/batching.h) and is called through its typed
// function (losses/losses.h) on the model's embeddings:
//
//   loss                    batch strategy        call
//   infonce                 infonce               infonce(q, p, neg, -, tau)
//   infonce_symmetric       infonce               infonce_symmetric(q, p, neg, -, tau)
//   multi_positive          multiple_positives    multi_positive(q, p, qid, tau)
//   rank_infonce            multiple_positives    rank_infonce(q, p, qid, rank, score, options)
//   hard_negative_infonce   hard_negative         hard_negative_infonce(q, p, qid, tau, weight)
//   triplet                 triplet               triplet(q, p, n, margin, metric)
//   listwise                listwise              listwise(q, p [Q, K, d], score [Q, K], tau)
//   cosent                  hard_negative         cosent(q, p, score, scale)
//   contrastive             hard_negative         contrastive(q, p, score, margin, metric)
//   matryoshka              infonce               matryoshka(q, p, -, tau, dims, weights)
//
// neg: the hard negatives the data marks (Relevance::hard_negative, a pairs file's negative
// columns) of the batch's queries, each text once and none that is a positive of the batch;
// none when the data marks none. With config.mini_batch_size > 0, infonce,
// infonce_symmetric and matryoshka run through GradCache (nn/grad_cache.h): the same loss and gradient,
// embedding mini_batch_size rows at a time (data with hard negatives is refused). cosent and contrastive take each row as a pair labelled by
// its score (a marked negative scores 0); contrastive needs labels in [0, 1].
//
// Loss parameters come from config.loss_parameters over the catalogue's defaults. Batches
// with fewer rows than the loss needs are skipped (the step takes the next batch); a plan
// with no usable batch is an error naming the loss and the data.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "retrieval/run_config.h"
#include "retrieval/text_model.h"
#include "data/batching.h"
#include "data/dataset.h"
#include "data/tokenizer.h"
#include "losses/loss.h"
#include "nn/model.h"
#include "nn/optimizer.h"
#include "nn/trainer.h"

namespace nce::retrieval {

struct TrainingLoss;

// What a batch's loss is computed from.
struct BatchContext {
    const TrainingLoss& loss;  // the run's row of training_losses()
    nn::EmbeddingModel& model;
    const data::Tokenizer& tokenizer;
    const data::Batch& batch;
    const data::RetrievalDataset& train;
    const std::vector<std::vector<int64_t>>& hard_negatives;  // [q]: the passages the data marks as not query q's
    const RunConfig& config;
    const losses::LossArguments& parameters;  // the loss's, defaults filled in and checked by the registry
    Generator& generator;                     // dropout

    Var embed(const std::vector<std::string>& texts, int64_t max_length) const;  // [n, d], on the model's device
    Var queries() const;   // [B, d]: each row's query, after the model's query prompt
    Var passages() const;  // [B, d]: each row's passage, after the model's passage prompt
};

// The in-batch losses on embeddings gathered by the caller: q [n, d], p [n, d], extra
// negatives [M, d] (undefined: none) -> the loss.
using PairLoss = Var (*)(const Var& q, const Var& p, const Var& negatives, const losses::LossArguments& parameters);

// One row per loss that can train a model: how its batches are drawn (data/batching.h), the
// fewest rows a batch needs, its batch's loss, and the forms GradCache (--mini-batch-size) and
// mpirun call (null: the loss does not run that way). Parameters come from the loss registry
// (losses/loss.h).
struct TrainingLoss {
    const char* name;
    data::BatchStrategy strategy;
    size_t minimum_rows;
    Var (*batch_loss)(const BatchContext& context);
    PairLoss grad_cache_loss;   // on one process, the batch embedded mini_batch_size rows at a time
    PairLoss distributed_loss;  // under mpirun, each process's slice of the batch
    void (*check_data)(const data::RetrievalDataset& train);  // what the loss needs of the data, or null
};

// The run's AdamW (learning rate, weight decay) and trainer settings (budget, seed, schedule,
// clipping, validation every evaluate_every steps when `validates`, patience, the run's
// checkpoint and log files), as every supervised run of a RunConfig trains.
nn::AdamWOptions adam_options(const RunConfig& config);
nn::TrainerOptions trainer_options(const RunConfig& config, const RunFiles& files, int64_t steps_per_epoch,
                                   bool validates);

const std::vector<TrainingLoss>& training_losses();
// Throws naming the losses that can train.
const TrainingLoss& training_loss(const std::string& name);
// Their names, in the table's order.
const std::vector<std::string>& training_loss_names();

struct TrainingReport {
    nn::TrainingResult result;       // steps, last loss, best validation MRR@10, stopped early
    double seconds = 0;              // wall time of the training loop
    int64_t batches_per_epoch = 0;
    TruncationCount queries;         // training texts longer than the maximum lengths...
    TruncationCount passages;        // ...counted once, over the training split
    int64_t best_step = -1;          // the step of the kept parameters (0: the start); -1: no evaluation
};

// A model's validation score (higher is better): what the trainer keeps its best step by.
using ValidationScore = std::function<double(nn::EmbeddingModel&)>;

// Trains `model` in place on `train`, scoring MRR@10 on `validation` every
// config.evaluate_every steps: dense exact search over the validation passages as they are,
// or `score` when given (the retrieval apps score as their end-of-run choice does: passages
// read in windows, the terms at their best share, so the best step is best by that). Writes
// files.log, files.best_checkpoint and files.last_checkpoint; at the end the model holds the
// best evaluated parameters (or the last ones when there was no evaluation) and is saved as
// files.model. With start_is_a_candidate the starting parameters are scored before step 1 and
// may be the best (a fine-tuning that only forgets keeps its start); off, only trained
// parameters are (compare: what each loss does to a shared start). Throws nce::Error for an
// unknown loss, a split with nothing to train on, or a loss that stops being finite (naming
// the step).
TrainingReport train_text_encoder(nn::EmbeddingModel& model, const data::Tokenizer& tokenizer,
                                  const data::RetrievalDataset& train, const data::RetrievalDataset& validation,
                                  const RunConfig& config, const RunFiles& files, bool start_is_a_candidate = true,
                                  const ValidationScore& score = {});

}  // namespace nce::retrieval
