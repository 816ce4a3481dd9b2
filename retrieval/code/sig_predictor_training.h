// `nce code features`: trains the seed's sig_predictor (nn/sig_predictor.h) on precomputed
// teacher features (retrieval/code/teacher_features.h) and evaluates signature -> body retrieval.
//
//   split the functions by group (train / validation / test, the run's fractions and seed)
//   -> sig_predictor(signature_features, mask) = q [B, out_dim], unit rows
//   -> loss infonce(q, body_embeddings of the same rows, tau): the teacher's body embeddings
//      are fixed targets (constants), only the sig_predictor learns
//   -> every evaluate_every steps, validation MRR@10 over the validation bodies (the best
//      parameters are kept)
//   -> on the test split, every test signature ranked against every body of the folder (the
//      whole corpus), for the untrained and the trained sig_predictor
//
// The run writes into config.output what a text run writes (retrieval/settings/run_config.h RunFiles):
// config.json, model.safetensors (the sig_predictor), training_best/last.safetensors,
// train_log.jsonl, results.json, metrics.svg, training_curves.svg.
#pragma once
#include <string>

#include "retrieval/code/teacher_features.h"
#include "retrieval/report/metric_table.h"
#include "retrieval/settings/run_config.h"
#include "nn/trainer.h"

namespace nce::code {

struct FeatureRunOutcome {
    retrieval::MetricTable table;  // rows "untrained sig_predictor", "trained sig_predictor"
    nn::TrainingResult training;
    int64_t train_rows = 0, validation_rows = 0, test_rows = 0;
    double seconds = 0;
};

// The sig_predictor configuration of a run: the features' in_dim and out_dim, the run's sizes.
nn::ModelConfig sig_predictor_config(const retrieval::RunConfig& config, const TeacherFeatures& features);

// The whole run above; prints progress and the table. Throws nce::Error (one line) on a bad
// folder, a loss other than infonce or infonce_symmetric, or splits too small to train.
FeatureRunOutcome run_sig_predictor_training(const retrieval::RunConfig& config, const std::string& features_folder);

}  // namespace nce::code
