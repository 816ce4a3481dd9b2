#include "retrieval/run/run_preparation.h"

#include <algorithm>
#include <fmt/format.h>
#include <fstream>
#include <limits>

#include "engine/atomic_file.h"
#include "engine/error.h"
#include "engine/json_nesting.h"
#include "nn/sentence_transformers_folder.h"
#include "retrieval/settings/data_sizes.h"
#include "retrieval/model/model_source.h"
#include "retrieval/index/dense_ranker.h"
#include "retrieval/index/passage_index.h"
#include "retrieval/train/pretraining.h"
#include "retrieval/run/run_estimate.h"
#include "retrieval/model/text_model.h"

namespace nce::retrieval {

namespace fs = std::filesystem;

namespace {

// Whether the run's tokenizer reads names as words: the app's choice (code's, StackExchange's),
// or "app": {"identifier_words": true} in the run's config (`nce train --identifier-words`).
bool reads_identifier_words(const RetrievalApp& app, const RunConfig& config) {
    if (app.identifier_words) return true;
    if (!config.app.contains("identifier_words")) return false;
    const nlohmann::json& value = config.app.at("identifier_words");
    NCE_CHECK(value.is_boolean(), "config: app.identifier_words must be true or false, got {}", value.dump());
    return value.get<bool>();
}

// The run's tokenizer: with --init, the tokenizer.model beside that checkpoint (its ids are
// the ones the checkpoint learned), copied into the output folder; else one trained on
// `training_texts` (the training split's queries and passages).
data::Tokenizer run_tokenizer(const RetrievalApp& app, const RunConfig& config, ModelSource& source,
                              const std::vector<std::string>& training_texts, const RunFiles& files) {
    if (source.is_folder()) {
        // The folder's model and tokenizer are checked where the user put them (their files
        // named in any error), before anything is copied.
        const int64_t model_vocabulary = source.folder().config.vocab_size;
        data::Tokenizer own = data::Tokenizer::load(source.path());
        NCE_CHECK(own.vocab_size() <= model_vocabulary,
                  "--init {}: its tokenizer gives ids up to {}, more than the model's vocabulary ({}); the folder "
                  "mixes two models", source.path(), own.vocab_size(), model_vocabulary);
        std::string kept = pretrained_tokenizer_folder(files.output).string();
        copy_tokenizer_files(source.path(), kept);
        return data::Tokenizer::load(kept);
    }
    if (source.is_checkpoint()) {
        fs::path beside = fs::path(source.path()).parent_path() / "tokenizer.model";
        NCE_CHECK(fs::is_regular_file(source.path()), "--init {}: no such file (give a model checkpoint, e.g. "
                  "runs/<app>/pretrained.safetensors)", source.path());
        source.checkpoint_config();  // a checkpoint of another kind: the error names it
        NCE_CHECK(fs::is_regular_file(beside), "--init {}: no tokenizer.model beside it; the checkpoint's token ids "
                  "need the tokenizer it was trained with (keep the run's folder together)", source.path());
        std::error_code error;
        if (!fs::equivalent(beside, files.tokenizer, error))
            copy_file_atomically(beside.string(), files.tokenizer, fmt::format("--init {}", source.path()));
        return data::Tokenizer::load(files.tokenizer);
    }
    return train_run_tokenizer(training_texts, config, config.output, reads_identifier_words(app, config));
}

}  // namespace

data::RetrievalDataset load_checked(const RetrievalApp& app, const RunConfig& config) {
    data::RetrievalDataset dataset = app.load_dataset(config);
    std::string source = config.data.empty() ? "the generated data" : config.data;
    NCE_CHECK(!dataset.passages.empty(), "{}: the corpus is empty (no passages); check the data file", source);
    NCE_CHECK(!dataset.queries.empty(), "{}: no queries with an answer; check the data file", source);
    return dataset;
}

void write_split_ids(const std::string& path, const data::DatasetSplits& splits) {
    auto ids = [](const data::RetrievalDataset& d) {
        nlohmann::json list = nlohmann::json::array();
        for (const data::Query& query : d.queries) list.push_back(query.id);
        return list;
    };
    nlohmann::json json = {{"train", ids(splits.train)}, {"validation", ids(splits.validation)}, {"test", ids(splits.test)}};
    write_text_file_atomically(path, json.dump() + "\n");
}

NewFolderGuard::NewFolderGuard(std::string path) : path_(std::move(path)), is_new_(!fs::exists(path_)) {}

NewFolderGuard::~NewFolderGuard() {
    std::error_code ignored;
    if (is_new_ && !kept_) fs::remove_all(path_, ignored);
}

RunConfig fitted_to(const RunConfig& config, const nn::EmbeddingModel& model) {
    RunConfig fitted = config;
    const int64_t most = model.config().max_len;
    auto fit = [most](int64_t length) { return length == kSizedToData ? most : std::min(length, most); };
    fitted.max_query_length = fit(config.max_query_length);
    fitted.max_passage_length = fit(config.max_passage_length);
    return fitted;
}

fs::path pretrained_tokenizer_folder(const std::string& run_folder) { return fs::path(run_folder) / "tokenizer"; }

fs::path sentence_transformers_folder(const std::string& run_folder) {
    return fs::path(run_folder) / "sentence-transformers";
}

std::optional<double> run_dense_weight(const RunFiles& files, const std::string& checkpoint) {
    std::error_code error;
    if (!fs::exists(files.results, error) || !fs::equivalent(checkpoint, files.model, error)) return std::nullopt;
    try {
        std::ifstream file(files.results);
        std::string text{std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
        check_json_nesting(text, files.results);
        return nlohmann::json::parse(text).at("fusion").at("dense_weight").get<double>();
    } catch (const nlohmann::json::exception&) {
        return std::nullopt;
    }
}

data::Tokenizer tokenizer_for(const std::string& checkpoint_path, const RunFiles& files) {
    std::string path = tokenizer_beside(fs::path(checkpoint_path).parent_path().string());
    if (path.empty()) path = files.tokenizer;
    NCE_CHECK(fs::exists(path), "tokenizer {}: no such file (train first: it is written beside the model)", path);
    return data::Tokenizer::load(path);
}

void print_folder_notes(ModelSource& source) {
    for (const std::string& note : source.folder().notes) fmt::print("--init {}: note: {}\n", source.path(), note);
}

std::unique_ptr<nn::EmbeddingModel> load_init_checkpoint(const RunConfig& config, ModelSource& source,
                                                         int64_t vocab_size) {
    std::unique_ptr<nn::EmbeddingModel> model = source.take_checkpoint_model();
    const nn::ModelConfig& found = model->config();
    nn::ModelConfig wanted = text_encoder_config(config, vocab_size);
    auto sizes = [](const nn::ModelConfig& c) {
        return fmt::format("vocabulary {}, max_len {}, d_model {}, {} layers, {} heads, dim_feedforward {}, lexical_dim {}{}",
                           c.vocab_size, c.max_len, c.d_model, c.num_layers, c.nhead, c.dim_feedforward, c.lexical_dim,
                           c.term_weights ? " (term weights)" : "");
    };
    NCE_CHECK(sizes(found) == sizes(wanted) && found.out_dim == wanted.out_dim,
              "--init {}: the checkpoint is a text_encoder of {}, but this run builds one of {}; pass the sizes it "
              "was trained with (--d-model, --num-layers, --nhead, --dim-feedforward, --lexical-dim, --max-query-length, "
              "--max-passage-length) or another checkpoint", source.path(), sizes(found), sizes(wanted));
    // The prompts are no part of the size: the run's own win, and are saved with its model.
    if (found.query_prompt != wanted.query_prompt || found.passage_prompt != wanted.passage_prompt)
        fmt::print("--init {}: the checkpoint reads queries after \"{}\" and passages after \"{}\"; this run trains and "
                   "saves the prompts \"{}\" and \"{}\" (--query-prompt, --passage-prompt)\n",
                   source.path(), found.query_prompt, found.passage_prompt, wanted.query_prompt, wanted.passage_prompt);
    return with_training_dropout(with_model_prompts(std::move(model), wanted.query_prompt, wanted.passage_prompt),
                                 config.dropout);
}

data::Tokenizer sized_run_tokenizer(const RetrievalApp& app, RunConfig& config, ModelSource& source,
                                    const data::DatasetSplits& splits, const RunFiles& files) {
    std::vector<std::string> queries = query_texts_of(splits.train), passages = passage_texts_of(splits.train);
    std::vector<std::string> texts = queries;
    texts.insert(texts.end(), passages.begin(), passages.end());
    if (source.fresh()) size_vocabulary(config, texts);
    data::Tokenizer tokenizer = run_tokenizer(app, config, source, texts, files);
    if (config.vocab_size == kSizedToData) config.vocab_size = tokenizer.vocab_size();  // --init's tokenizer
    size_lengths(config, tokenizer, queries, passages);
    if (source.is_folder()) {  // the model reads no more than its max_seq_length
        int64_t most = source.folder().config.max_len;
        config.max_query_length = std::min(config.max_query_length, most);
        config.max_passage_length = std::min(config.max_passage_length, most);
    }
    return tokenizer;
}

void print_tokenizer(const data::Tokenizer& tokenizer, const RunConfig& config, const ModelSource& source,
                     const RunFiles& files) {
    bool pretrained = source.is_folder();
    fmt::print("tokenizer: {} pieces ({}){}{}\n", tokenizer.vocab_size(),
               pretrained ? pretrained_tokenizer_folder(files.output).string() + ", the pretrained model's"
                          : files.tokenizer,
               tokenizer.reads_identifier_words()
                   ? "; names and words read apart from case and punctuation (getLineNumber(x) -> get line number ( x ))"
                   : "",
               !pretrained && tokenizer.vocab_size() < config.vocab_size
                   ? fmt::format("; the text fills no more than that of the {} asked for", config.vocab_size)
                   : "");
}

int64_t pretraining_step_limit(const RunConfig& config) {
    return config.chosen.count("max_steps") != 0 ? config.max_steps : std::numeric_limits<int64_t>::max();
}

void print_plan(const RetrievalApp& app, const RunConfig& config, const data::Tokenizer& tokenizer,
                const data::RetrievalDataset& dataset, const data::DatasetSplits& splits, nn::EmbeddingModel& model,
                bool pretraining) {
    const int64_t window = passage_window(tokenizer, model.config().passage_prompt, config.max_passage_length,
                                          app.chunk_overlap);
    const auto windows_of = [&](const std::vector<data::Passage>& passages) {
        return chunk_passages(passages, tokenizer, window, app.chunk_overlap);
    };
    RunWork work;
    std::string phases;
    if (pretraining) {
        work.pretraining_steps = pretraining_steps(config, static_cast<int64_t>(windows_of(dataset.passages).size()),
                                                   pretraining_step_limit(config));
        work.pretraining_candidates = config.pretrain_candidates;
        phases = fmt::format("corpus pretraining, {} steps of {} pseudo-queries; then ", work.pretraining_steps,
                             config.pretrain_batch_size);
    }
    work.training_steps = config.max_steps;
    work.validations = config.evaluate_every > 0 ? config.max_steps / config.evaluate_every : 0;
    work.validation_queries = static_cast<int64_t>(splits.validation.queries.size());
    work.validation_windows = static_cast<int64_t>(windows_of(splits.validation.passages).size());
    work.test_queries = static_cast<int64_t>(splits.test.queries.size());
    const std::vector<PassageChunk> test_windows = windows_of(splits.test.passages);
    work.test_windows = static_cast<int64_t>(test_windows.size());
    work.evaluated_models = pretraining ? 3 : 2;  // the untrained or zero-shot row, the trained one, the pretrained one
    std::vector<std::string> probe_queries, probe_passages;
    for (const data::Query& query : splits.train.queries) probe_queries.push_back(query.text);
    const std::vector<data::Passage> first_passages(
        splits.train.passages.begin(),
        splits.train.passages.begin() + static_cast<std::ptrdiff_t>(std::min<size_t>(16, splits.train.passages.size())));
    for (const PassageChunk& chunk : windows_of(first_passages)) probe_passages.push_back(chunk.text);
    const RunEstimate estimate =
        estimate_run(probe_text_costs(model, tokenizer, probe_queries, probe_passages, config), work, config);
    std::string parts = pretraining ? fmt::format("pretraining ~{}, ", rough_duration(estimate.pretraining)) : "";
    parts += fmt::format("training ~{}, evaluation ~{}", rough_duration(estimate.training),
                         rough_duration(estimate.evaluation));
    fmt::print("plan: {}training, {} steps of {} rows{}; about {} in all ({}, timed on a probe of 16 texts; each "
               "phase's progress line gives its own ETA)\n", phases, config.max_steps, config.batch_size,
               config.evaluate_every > 0 ? fmt::format(", validation every {} steps", config.evaluate_every) : "",
               rough_duration(estimate.total()), parts);
    std::fflush(stdout);
}

data::DatasetSplits split_for_app(const RetrievalApp& app, const data::RetrievalDataset& dataset,
                                  const RunConfig& config) {
    data::DatasetSplits splits = app.split ? app.split(dataset, config)
                                           : data::split_by_group(dataset, config.validation_fraction,
                                                                  config.test_fraction, config.seed);
    std::string source = config.data.empty() ? "the generated data" : config.data;
    for (const auto& [name, side] : {std::pair<const char*, const data::RetrievalDataset*>{"train", &splits.train},
                                     {"validation", &splits.validation},
                                     {"test", &splits.test}}) {
        NCE_CHECK(!side->queries.empty() && !side->passages.empty(),
                  "{}: the {} split is empty ({} queries, {} passages split by group); use more data or change "
                  "--validation-fraction / --test-fraction", source, name, dataset.queries.size(), dataset.passages.size());
    }
    return splits;
}

void use_model_dropout(RunConfig& config, ModelSource& source) {
    if (config.chosen.count("dropout") == 0) config.dropout = source.folder().config.dropout;
}

std::string use_fine_tuning_defaults(RunConfig& config, ModelSource& source, const RetrievalApp& app,
                                     int64_t training_queries) {
    auto chosen = [&](const char* setting) { return config.chosen.count(setting) != 0; };
    use_model_dropout(config, source);
    std::vector<std::string> changed;
    const RetrievalApp::FineTuning& own = app.fine_tuning;
    if (!own.loss.empty() && !chosen("loss") && own.loss != config.loss) {
        config.loss = own.loss;
        changed.push_back(fmt::format("loss {} (--loss)", own.loss));
    }
    if (own.batch_size > 0 && !chosen("batch_size") && own.batch_size != config.batch_size) {
        config.batch_size = own.batch_size;
        changed.push_back(fmt::format("batches of {} (--batch-size)", own.batch_size));
    }
    // Shorter only: the sized length is already within the model's max_seq_length.
    if (own.passage_length > 0 && !chosen("max_passage_length") && own.passage_length < config.max_passage_length) {
        config.max_passage_length = own.passage_length;
        changed.push_back(fmt::format("passages read {} tokens at a time (--max-passage-length)", config.max_passage_length));
    }
    if (!chosen("max_steps")) {
        config.max_steps = std::max<int64_t>(1, (training_queries + config.batch_size - 1) / config.batch_size);
        changed.push_back(fmt::format("one epoch of {} steps (--max-steps)", config.max_steps));
    }
    if (!chosen("evaluate_every") && config.evaluate_every > 0) {
        config.evaluate_every = std::max<int64_t>(1, config.max_steps / 4);
        changed.push_back(fmt::format("validation every {} steps (--evaluate-every)", config.evaluate_every));
    }
    if (!chosen("learning_rate")) {
        config.learning_rate = kFineTuningLearningRate;
        changed.push_back("learning rate 2e-5 (--learning-rate)");
    }
    if (!chosen("warmup_steps")) {
        config.warmup_steps = std::max<int64_t>(1, config.max_steps / 10);
        changed.push_back(fmt::format("warmup {} steps (--warmup-steps)", config.warmup_steps));
    }
    std::string settings = changed.empty() ? "the settings as given" : changed.front();
    for (size_t i = 1; i < changed.size(); ++i) settings += ", " + changed[i];
    return fmt::format("{}; lengths within its max_seq_length (queries {}, passages {} tokens)", settings,
                       config.max_query_length, config.max_passage_length);
}

}  // namespace nce::retrieval
