// The run's tokenizer and text_encoder, and encoding texts in batches without a graph.
#include "retrieval/model/text_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

#include "retrieval/embedding/run_device.h"
#include "data/text_prefix.h"
#include "engine/error.h"
#include "engine/tensor_math.h"
#include "nn/checkpoint.h"
#include "nn/memory_estimate.h"
#include "nn/sentence_transformers_folder.h"

namespace nce::retrieval {

data::Tokenizer train_run_tokenizer(const std::vector<std::string>& texts, const RunConfig& config,
                                    const std::string& directory, bool identifier_words) {
    data::TokenizerOptions options;
    options.vocab_size = config.vocab_size;
    options.model_type = config.tokenizer_type;
    options.character_coverage = config.character_coverage;
    options.seed = static_cast<uint32_t>(config.seed);
    options.exact_vocab_size = false;  // a small corpus gets the pieces it can fill (the run prints how many)
    options.identifier_words = identifier_words;
    try {
        return data::Tokenizer::train(texts, options, directory);
    } catch (const Error& error) {
        fail("{} (flag --vocab-size)", error.what());
    }
}

nn::ModelConfig text_encoder_config(const RunConfig& config, int64_t vocab_size) {
    nn::ModelConfig model;
    model.kind = "text_encoder";
    model.vocab_size = vocab_size;
    model.max_len = std::max(config.max_query_length, config.max_passage_length);
    model.d_model = config.d_model;
    model.nhead = config.nhead;
    model.dim_feedforward = config.dim_feedforward;
    model.num_layers = config.num_layers;
    model.dropout = config.dropout;
    model.activation = "gelu";
    model.norm_first = true;  // pre-norm trains steadily from scratch with a short warmup
    model.out_dim = 0;
    model.lexical_dim = lexical_width(config);
    model.term_weights = has_term_weights(config);
    model.query_prompt = config.query_prompt;
    model.passage_prompt = config.passage_prompt;
    return nn::validate_config(model);
}

int64_t prompt_tokens(const data::Tokenizer& tokenizer, const std::string& prompt) {
    if (prompt.empty()) return 0;
    const data::Tokenizer::SpecialTokens specials = tokenizer.special_tokens();  // not the prompt's own
    return static_cast<int64_t>(tokenizer.encode_ids(prompt).size()) - specials.before - specials.after;
}

namespace {

// The same model in a new config of the same sizes, its parameters copied over.
std::unique_ptr<nn::EmbeddingModel> rebuilt_with(nn::EmbeddingModel& model, const nn::ModelConfig& config) {
    Generator unused_initialisation(0);  // every parameter is copied over below
    std::unique_ptr<nn::EmbeddingModel> rebuilt =
        nn::make_model(config, unused_initialisation, model.parameters().front()->dtype());
    rebuilt->to(model_device(model));  // load_parameters copies onto the parameters' device
    std::map<std::string, Tensor> parameters;
    for (auto& [name, parameter] : model.named_parameters()) parameters[name] = parameter->value();
    nn::load_parameters(*rebuilt, parameters, "the model given new settings");
    rebuilt->train(model.training());
    return rebuilt;
}

}  // namespace

std::unique_ptr<nn::EmbeddingModel> with_model_prompts(std::unique_ptr<nn::EmbeddingModel> model,
                                                       const std::string& query_prompt,
                                                       const std::string& passage_prompt) {
    if (model->config().query_prompt == query_prompt && model->config().passage_prompt == passage_prompt) return model;
    nn::ModelConfig config = model->config();
    config.query_prompt = query_prompt;
    config.passage_prompt = passage_prompt;
    return rebuilt_with(*model, config);
}

std::unique_ptr<nn::EmbeddingModel> with_training_dropout(std::unique_ptr<nn::EmbeddingModel> model, double dropout) {
    if (model->config().dropout == dropout) return model;
    nn::ModelConfig config = model->config();
    config.dropout = dropout;
    if (config.kind == "bert") config.attention_dropout = dropout;
    return rebuilt_with(*model, config);
}

std::unique_ptr<nn::EmbeddingModel> copied_model(nn::EmbeddingModel& model) {
    return rebuilt_with(model, model.config());
}

void check_run_memory(const nn::ModelConfig& model, const RunConfig& config) {
    if (config.device != Device::CPU) return;  // the activations live on the GPU, whose allocator reports its own limit
    nn::TrainingBatchShape batch;
    batch.query_rows = config.mini_batch_size > 0 ? std::min(config.mini_batch_size, config.batch_size) : config.batch_size;
    batch.query_tokens = config.max_query_length;
    batch.passage_rows = batch.query_rows;  // corpus pretraining checks its own batch (pretraining.cpp)
    batch.passage_tokens = config.max_passage_length;
    batch.checkpoint_activations = config.checkpoint_activations;
    nn::check_training_memory(model, batch, "lower --batch-size, the lengths, --d-model, --num-layers, "
                              "--dim-feedforward or --lexical-dim, or add --mini-batch-size or --checkpoint-activations");
}

std::unique_ptr<nn::EmbeddingModel> make_text_encoder(const RunConfig& config, int64_t vocab_size) {
    const nn::ModelConfig model_config = text_encoder_config(config, vocab_size);
    check_run_memory(model_config, config);
    Generator generator(config.seed);
    return nn::make_model(model_config, generator);
}

std::unique_ptr<nn::EmbeddingModel> load_text_encoder(const std::string& checkpoint_path) {
    NCE_CHECK(std::filesystem::is_regular_file(checkpoint_path),
              "checkpoint {}: no such file (train first, or pass --checkpoint FILE)", checkpoint_path);
    std::unique_ptr<nn::EmbeddingModel> model = nn::load_model(checkpoint_path);
    NCE_CHECK(model->config().kind == "text_encoder" || model->config().kind == "bert",
              "checkpoint {}: holds a {} model, but this app needs a text_encoder or a bert (use a checkpoint this app "
              "trained)",
              checkpoint_path, model->config().kind);
    return model;
}

bool is_model_folder(const std::string& path) { return !path.empty() && std::filesystem::is_directory(path); }

std::unique_ptr<nn::EmbeddingModel> load_pretrained_folder(const std::string& folder, const RunConfig& config,
                                                           bool print_notes) {
    nn::PretrainedModel pretrained = nn::load_sentence_transformers(folder);
    if (print_notes)
        for (const std::string& note : pretrained.notes) fmt::print("--init {}: note: {}\n", folder, note);
    return as_the_run_reads(std::move(pretrained.model), config);
}

std::unique_ptr<nn::EmbeddingModel> as_the_run_reads(std::unique_ptr<nn::EmbeddingModel> pretrained,
                                                     const RunConfig& config) {
    const nn::ModelConfig& own = pretrained->config();
    std::string query_prompt = config.query_prompt.empty() ? own.query_prompt : config.query_prompt;
    std::string passage_prompt = config.passage_prompt.empty() ? own.passage_prompt : config.passage_prompt;
    return with_training_dropout(with_model_prompts(std::move(pretrained), query_prompt, passage_prompt),
                                 config.dropout);
}

std::string tokenizer_beside(const std::string& folder) {
    namespace fs = std::filesystem;
    for (fs::path kept : {fs::path(folder) / "tokenizer.model", fs::path(folder) / "tokenizer"})
        if (fs::exists(kept)) return kept.string();
    return "";
}

void copy_tokenizer_files(const std::string& folder, const std::string& destination) {
    namespace fs = std::filesystem;
    fs::create_directories(destination);
    for (const char* name : {"tokenizer.json", "vocab.txt", "tokenizer_config.json", "special_tokens_map.json",
                             "added_tokens.json", "sentencepiece.bpe.model"}) {
        fs::path source = fs::path(folder) / name;
        if (!fs::is_regular_file(source)) continue;
        std::error_code error;
        fs::copy_file(source, fs::path(destination) / name, fs::copy_options::overwrite_existing, error);
        NCE_CHECK(!error, "cannot copy {} into {}: {}", source.string(), destination, error.message());
    }
}

int64_t count_truncated(const data::Tokenizer& tokenizer, const std::vector<std::string>& texts, int64_t max_length) {
    int64_t truncated = 0;
    for (const std::string& text : texts)
        if (static_cast<int64_t>(tokenizer.encode_ids(std::string(data::prefix_for_tokens(text, max_length))).size()) >
            max_length)
            ++truncated;
    return truncated;
}

Tensor encode_texts(nn::EmbeddingModel& model, const data::Tokenizer& tokenizer, const std::vector<std::string>& texts,
                    int64_t max_length, int64_t batch_size, TruncationCount* count) {
    NCE_CHECK(!texts.empty(), "encode: no texts to encode (the corpus or query list is empty)");
    NCE_CHECK(max_length <= model.config().max_len, "encode: max_length {} exceeds the model's max_len {}", max_length,
              model.config().max_len);
    // Each text's tokens, capped at max_length: the length it is padded against.
    std::vector<int64_t> lengths(texts.size());
    for (size_t i = 0; i < texts.size(); ++i) {
        std::vector<int64_t> ids = tokenizer.encode_ids(std::string(data::prefix_for_tokens(texts[i], max_length)));
        NCE_CHECK(!ids.empty(), "encode: text {} gives no token (it is empty or only spaces); drop it from the data", i);
        lengths[i] = std::min<int64_t>(static_cast<int64_t>(ids.size()), max_length);
        if (count) {
            ++count->texts;
            if (static_cast<int64_t>(ids.size()) > max_length) ++count->truncated;
        }
    }
    // Batches of texts of like length, longest first (as sentence-transformers encodes): a batch
    // pads to its longest text, so one long text among short ones no longer makes the whole
    // batch pay for its length. A text's embedding does not depend on its batch (padding is
    // masked); the rows go back to the texts' order below.
    std::vector<int64_t> order(texts.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int64_t>(i);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        return lengths[static_cast<size_t>(a)] > lengths[static_cast<size_t>(b)];
    });
    NoGradGuard no_grad;
    bool was_training = model.training();
    model.train(false);
    std::vector<Tensor> parts;
    for (size_t start = 0; start < order.size(); start += static_cast<size_t>(batch_size)) {
        size_t end = std::min(order.size(), start + static_cast<size_t>(batch_size));
        std::vector<std::string> batch;
        for (size_t i = start; i < end; ++i) batch.push_back(texts[static_cast<size_t>(order[i])]);
        data::EncodedBatch encoded = tokenizer.encode(batch, max_length);
        // On the model's device; the rows come back to the host for FAISS and the metrics.
        parts.push_back(encode_on_model_device(model, encoded, nullptr).value().to(Device::CPU).to(Dtype::Float32));
    }
    model.train(was_training);
    Tensor sorted = parts.size() == 1 ? parts[0] : concat(parts, 0);  // [texts, D], longest first
    std::vector<int64_t> row_of_text(texts.size());
    for (size_t i = 0; i < order.size(); ++i) row_of_text[static_cast<size_t>(order[i])] = static_cast<int64_t>(i);
    return index_select(sorted, Tensor::from_indices(row_of_text, {static_cast<int64_t>(row_of_text.size())}));
}

Tensor truncate_embeddings(const Tensor& embeddings, int64_t dimensions) {
    const int64_t rows = embeddings.size(0), width = embeddings.size(1);
    NCE_CHECK(dimensions >= 0 && dimensions <= width, "--truncate-dim must be in 1..{} (the model's width), or 0 for "
              "all of it; got {}", width, dimensions);
    if (dimensions == 0 || dimensions == width) return embeddings;
    std::vector<double> values = embeddings.to_vector(), prefix(static_cast<size_t>(rows * dimensions));
    for (int64_t row = 0; row < rows; ++row) {
        double squares = 0;
        for (int64_t column = 0; column < dimensions; ++column)
            squares += values[static_cast<size_t>(row * width + column)] * values[static_cast<size_t>(row * width + column)];
        NCE_CHECK(squares > 0, "--truncate-dim {}: row {} has only zeros in its first {} numbers; use a larger "
                  "--truncate-dim", dimensions, row, dimensions);
        double norm = std::sqrt(squares);
        for (int64_t column = 0; column < dimensions; ++column)
            prefix[static_cast<size_t>(row * dimensions + column)] = values[static_cast<size_t>(row * width + column)] / norm;
    }
    return Tensor::from_vector(prefix, {rows, dimensions}, embeddings.dtype());
}

}  // namespace nce::retrieval
