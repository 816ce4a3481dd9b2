// `nce train`: the retrieval run of retrieval/run/retrieval_app.h on the user's own files.
//
//   --train FILE          pairs to learn from (data/pairs_reader.h: anchor, positive,
//                         negatives, score, query_id; JSON lines, CSV or TSV)
//   --validation FILE     pairs to measure on, in the same form (optional)
//   --corpus FILE         more passages for the measured search to look through (optional;
//                         one text per line, or a "text" column)
//   --format jsonl|csv|tsv  the form of --train and --validation when their extension does not say
//
// The split. With --validation, the table is measured on it: its anchors are the queries and
// its positives, negatives and the corpus the passages searched; a negative is never counted
// relevant. The training file gives the rest: validation_fraction of its queries (by
// query_id or anchor) choose the best checkpoint and the hybrid's weight, so nothing the
// table reports was tuned on what it measures. Without --validation, the training file is
// split three ways by query (validation_fraction, test_fraction) and the corpus joins the
// test side. Corpus pretraining reads every passage of all the files, never a label.
//
// A passage longer than max_passage_length is read in overlapping windows: in the table it
// scores as its best window; in training a query learns from the window of its positive
// (and of each negative) that shares the most words with it (retrieval/train/training_windows.h).
//
// The loss must fit the training file's columns (retrieval/pairs/loss_fit.h). Settings live in
// RunConfig (data = the training file) and under "app": "validation", "corpus", "format",
// "lenient", so the run's config.json records them.
#pragma once
#include "retrieval/run/retrieval_app.h"

namespace nce::pairs {

// The passage group of --corpus texts.
inline constexpr const char* kCorpusGroup = "corpus";

// The app: name "train", defaults for a small model, loader and split as above.
retrieval::RetrievalApp pairs_app();

// The training file, the validation file and the corpus as one data set: queries grouped
// "train:<key>" or "validation:<key>", passages likewise, corpus passages in kCorpusGroup.
// Checks the loss against the training file's columns first.
data::RetrievalDataset load_pairs_dataset(const retrieval::RunConfig& config);

// The split described above, of what load_pairs_dataset returned.
data::DatasetSplits split_pairs_dataset(const data::RetrievalDataset& dataset, const retrieval::RunConfig& config);

}  // namespace nce::pairs
