// `nce stackexchange compare`: one model trained per loss, with the same data, split,
// tokenizer, initial weights, seed and step budget, then every model scored in the three
// views of retrieval/stackexchange/evaluation_views.h beside the untrained model, BM25 and a hybrid.
//
//   data -> split by question -> tokenizer on the train texts (shared by every loss)
//   -> untrained row and BM25 (whitespace) row
//   -> corpus pretraining once (retrieval/train/pretraining.h; not with --no-pretrain):
//      pretrained.safetensors and its row
//   -> for each loss: the pretrained model (or, with --no-pretrain, a fresh text_encoder of
//      the same seed), so every loss has the same start, trained with
//      retrieval/train/training.h (the loss's batch strategy, config.max_steps steps) -> its row
//   -> hybrid row: BM25 fused with the loss whose model has the best validation MRR@10, the
//      fusion weight chosen on the validation split (eval/rankings.h)
//   -> in each view, every loss against that view's best loss on test MRR@10, a paired
//      bootstrap over the test questions (retrieval/stackexchange/loss_significance.h): the table's
//      "vs best mrr@10" column says "best", or the p-value with a `*` when significant at 5%
//
// Every cell carries its 95% interval (a bootstrap over the test questions, the run's seed).
//
// Written under <output>/compare/: compare.json (the three tables with their intervals and
// each view's "paired_test", and the facts of the run),
// compare_<view>.svg (each table as grouped bars), training_loss.svg (every loss's training
// curve), tokenizer.model, config.json, and <loss>/ with that model's checkpoint and log.
#pragma once
#include <string>
#include <vector>

#include "retrieval/report/metric_table.h"
#include "retrieval/run/retrieval_app.h"
#include "retrieval/settings/run_config.h"
#include "retrieval/stackexchange/loss_significance.h"

namespace nce::stackexchange {

struct ComparisonOutcome {
    std::vector<retrieval::MetricTable> tables;  // one per view, in all_views() order
    std::vector<SignificanceAgainstBest> significance;  // per view: each loss against the view's best
    std::string best_loss;                       // by validation MRR@10
    double seconds = 0;
};

// Runs the comparison above for the losses of config.app ("losses"; all seven by default),
// prints the three tables and writes the files. Throws nce::Error (one line) on bad data or
// settings.
ComparisonOutcome run_loss_comparison(const retrieval::RetrievalApp& app, const retrieval::RunConfig& config);

}  // namespace nce::stackexchange
