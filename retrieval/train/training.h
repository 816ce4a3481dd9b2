// Training a text_encoder on a split's (query, passage) pairs with one contrastive loss,
// through nn::Trainer (AdamW, warmup + schedule, gradient clipping, JSON-lines log, best and
// last training checkpoints, early stopping on validation MRR@10). Each loss's batches and
// call are its row of training_losses() (retrieval/embedding/training_losses.h).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "retrieval/settings/run_config.h"
#include "retrieval/model/text_model.h"
#include "retrieval/embedding/training_losses.h"
#include "data/batching.h"
#include "data/dataset.h"
#include "data/tokenizer.h"
#include "losses/loss.h"
#include "nn/model.h"
#include "nn/optimizer.h"
#include "nn/trainer.h"

namespace nce::retrieval {

// The run's AdamW (learning rate, weight decay) and trainer settings (budget, seed, schedule,
// clipping, validation every evaluate_every steps when `validates`, patience, the run's
// checkpoint and log files), as every supervised run of a RunConfig trains.
nn::AdamWOptions adam_options(const RunConfig& config);
nn::TrainerOptions trainer_options(const RunConfig& config, const RunFiles& files, int64_t steps_per_epoch,
                                   bool validates);

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
