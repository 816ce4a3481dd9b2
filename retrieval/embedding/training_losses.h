// The losses a retrieval model trains with, one row each: how its batches are drawn, what it
// embeds from a batch and which loss it calls on the embeddings, and the forms GradCache and
// mpirun call. It stands below the run's settings (retrieval/settings/run_config.h lists these names
// as --loss's choices) and knows nothing of them: a batch's context carries the two lengths.
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
// none when the data marks none. With --mini-batch-size > 0, infonce,
// infonce_symmetric and matryoshka run through GradCache (nn/grad_cache.h): the same loss and gradient,
// embedding mini_batch_size rows at a time (data with hard negatives is refused). cosent and contrastive take each row as a pair labelled by
// its score (a marked negative scores 0); contrastive needs labels in [0, 1].
//
// Loss parameters come from the run's loss_parameters over the catalogue's defaults. Batches
// with fewer rows than the loss needs are skipped (the step takes the next batch); a plan
// with no usable batch is an error naming the loss and the data.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "data/batching.h"
#include "data/dataset.h"
#include "data/tokenizer.h"
#include "engine/nce.h"
#include "losses/loss.h"
#include "nn/model.h"

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
    int64_t max_query_length;                 // tokens, the run's (RunConfig)
    int64_t max_passage_length;
    const losses::LossArguments& parameters;  // the loss's, defaults filled in and checked by the registry
    Generator& generator;                     // dropout

    Var embed(const std::vector<std::string>& texts, int64_t max_length) const;  // [n, d], on the model's device
    Var queries() const;   // [B, d]: each row's query, after the model's query prompt
    Var passages() const;  // [B, d]: each row's passage, after the model's passage prompt
};

// The in-batch losses on embeddings gathered by the caller: q [n, d], p [n, d], extra
// negatives [M, d] (undefined: none) -> the loss.
using PairLoss = Var (*)(const Var& q, const Var& p, const Var& negatives, const losses::LossArguments& parameters);

// What a loss does with a pairs file's negative columns (retrieval/pairs/loss_fit.h refuses
// the columns a loss would ignore or misread).
enum class NegativeColumns {
    Read,          // candidates the loss scores against the anchor (or its triplet's negative)
    Ignored,       // the loss has no place for them
    PulledCloser,  // hard_negative_infonce counts every text of a query as a positive of its own row
};

// One row per loss that can train a model: how its batches are drawn (data/batching.h), the
// fewest rows a batch needs, its batch's loss, and the forms GradCache (--mini-batch-size) and
// mpirun call (null: the loss does not run that way); then what it reads of a pairs file's
// labels. Parameters come from the loss registry (losses/loss.h).
struct TrainingLoss {
    const char* name;
    data::BatchStrategy strategy;
    size_t minimum_rows;
    Var (*batch_loss)(const BatchContext& context);
    PairLoss grad_cache_loss;   // on one process, the batch embedded mini_batch_size rows at a time
    PairLoss distributed_loss;  // under mpirun, each process's slice of the batch
    void (*check_data)(const data::RetrievalDataset& train);  // what the loss needs of the data, or null
    bool reads_scores;          // a score column weighs its pairs (else every pair is a positive)
    NegativeColumns negatives;
    bool needs_labels;          // it learns from good and bad pairs alike: a score column or negative columns
};

const std::vector<TrainingLoss>& training_losses();
// Throws naming the losses that can train.
const TrainingLoss& training_loss(const std::string& name);
// Their names, in the table's order.
const std::vector<std::string>& training_loss_names();

// A run's loss, resolved once from its name and its parameters as text (--loss-parameter,
// "loss_parameters"): its row, and its parameters over the registry's defaults, checked and
// parsed, so a training step reads tau as a number and finds its row without a name.
struct RunLoss {
    const TrainingLoss& row;
    losses::LossArguments parameters;
};
// Throws naming an unknown loss or parameter, or a value out of its range.
RunLoss run_loss(const std::string& name, const std::map<std::string, std::string>& parameters);

// The texts as the model reads them: its query prompt, or its passage prompt, in front.
std::vector<std::string> as_queries(const nn::EmbeddingModel& model, std::vector<std::string> texts);
std::vector<std::string> as_passages(const nn::EmbeddingModel& model, std::vector<std::string> texts);

// The extra candidates of an in-batch loss's batch: the hard negatives of its rows' queries,
// each text once, leaving out any text that is a positive of the batch (it would be scored as
// a negative of its own query). Empty when the data marks none.
std::vector<std::string> batch_hard_negative_texts(const data::Batch& batch, const data::RetrievalDataset& train,
                                                   const std::vector<std::vector<int64_t>>& hard_negatives);

}  // namespace nce::retrieval
