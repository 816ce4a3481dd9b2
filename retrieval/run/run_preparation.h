// Before a retrieval run trains or measures: its data, split and output folder, the
// tokenizer and the model it starts from, and the plan it prints. run_train, run_pretrain,
// run_eval and run_index (retrieval_app.h) are these steps in order:
//
//   load_checked -> split_for_app -> NewFolderGuard, create_output_folder, write_split_ids
//   -> sized_run_tokenizer (a trained one, or --init's) -> use_fine_tuning_defaults (--init FOLDER)
//   -> print_tokenizer -> the model: --init's (model_source.h) or make_text_encoder
//   -> print_plan (with its time estimate)
#pragma once
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "data/dataset.h"
#include "data/split.h"
#include "data/tokenizer.h"
#include "nn/model.h"
#include "retrieval/model/model_source.h"
#include "retrieval/run/retrieval_app.h"
#include "retrieval/settings/run_config.h"

namespace nce::retrieval {

// Loads the app's data set and checks it has something to retrieve.
data::RetrievalDataset load_checked(const RetrievalApp& app, const RunConfig& config);

// Splits a data set as app.split says (or by group), checking that train, validation and
// test each have queries and passages (one line naming the split and the data otherwise).
data::DatasetSplits split_for_app(const RetrievalApp& app, const data::RetrievalDataset& dataset,
                                  const RunConfig& config);

// split.json: which queries (by the data's own ids) each split holds, so that another tool can
// train and test on exactly the run's split (benchmarks/peer/finetune_peer.sh does).
void write_split_ids(const std::string& path, const data::DatasetSplits& splits);

// A run's output folder that did not exist before the run is removed again when the run
// stops before its model starts learning from pairs (a bad setting, data too small to
// pretrain on, an --init of another size): nothing is left half written.
class NewFolderGuard {
public:
    explicit NewFolderGuard(std::string path);
    ~NewFolderGuard();
    NewFolderGuard(const NewFolderGuard&) = delete;
    NewFolderGuard& operator=(const NewFolderGuard&) = delete;
    void keep() { kept_ = true; }

private:
    std::string path_;
    bool is_new_;
    bool kept_ = false;
};

// The run's tokenizer (with --init FOLDER that folder's, copied into the output; with --init
// CHECKPOINT the one beside it; else one trained on the training split), with the vocabulary
// and the lengths left at -1 sized to the data, and a pretrained model's lengths kept within
// its max_seq_length.
data::Tokenizer sized_run_tokenizer(const RetrievalApp& app, RunConfig& config, ModelSource& source,
                                    const data::DatasetSplits& splits, const RunFiles& files);

// The learning rate a pretrained model fine-tunes at (sentence-transformers' usual 2e-5).
inline constexpr double kFineTuningLearningRate = 2e-5;

// A --dropout the user did not choose (config.chosen) takes the pretrained model's own
// (hidden_dropout_prob of --init's config.json), so that config.json records the dropout the
// run trains with.
void use_model_dropout(RunConfig& config, ModelSource& source);

// A pretrained model wants a short run at a small learning rate with warmup: each setting the
// user did not choose (config.chosen; a flag given at the from-scratch value stays as given)
// takes the fine-tuning one (the app's own
// loss, batch size and passage length where it names them, RetrievalApp::fine_tuning; one
// epoch over `training_queries`, 2e-5, a tenth of the steps of warmup, validation four times,
// the model's own dropout).
// Returns what changed and the lengths, for the run to print.
std::string use_fine_tuning_defaults(RunConfig& config, ModelSource& source, const RetrievalApp& app,
                                     int64_t training_queries);

// "tokenizer: N pieces (path)", then whether it reads names as words, and when the text filled
// fewer pieces than vocab_size allows, so.
void print_tokenizer(const data::Tokenizer& tokenizer, const RunConfig& config, const ModelSource& source,
                     const RunFiles& files);

// What the reader of an --init folder assumed, one "--init FOLDER: note: ..." line each.
void print_folder_notes(ModelSource& source);

// The checkpoint --init names, checked against the run's sizes: one of another kind or size is
// one line naming both and the flags to change.
std::unique_ptr<nn::EmbeddingModel> load_init_checkpoint(const RunConfig& config, ModelSource& source,
                                                         int64_t vocab_size);

// --max-steps, when the user chose it (config.chosen: the flag, or its key in --config), bounds
// the corpus-sized pretraining too: a short run is short.
int64_t pretraining_step_limit(const RunConfig& config);

// The run's phases, their steps and how long they should take (run_estimate.h), printed
// before the first one starts.
void print_plan(const RetrievalApp& app, const RunConfig& config, const data::Tokenizer& tokenizer,
                const data::RetrievalDataset& dataset, const data::DatasetSplits& splits, nn::EmbeddingModel& model,
                bool pretraining);

// A config whose maximum lengths fit the model's positions (eval of a model trained with others);
// a length still sized to the data (no run config.json was found) becomes the model's max_len.
RunConfig fitted_to(const RunConfig& config, const nn::EmbeddingModel& model);

// Where a run fine-tuned from a pretrained folder keeps that folder's tokenizer files.
std::filesystem::path pretrained_tokenizer_folder(const std::string& run_folder);

// Where such a run writes its model as a sentence-transformers folder.
std::filesystem::path sentence_transformers_folder(const std::string& run_folder);

// The hybrid's dense weight the run chose on validation (its results.json), when `checkpoint`
// is the run's own model; none otherwise.
std::optional<double> run_dense_weight(const RunFiles& files, const std::string& checkpoint);

// The tokenizer for a checkpoint: the one beside it (tokenizer_beside), else the run's.
data::Tokenizer tokenizer_for(const std::string& checkpoint_path, const RunFiles& files);

}  // namespace nce::retrieval
