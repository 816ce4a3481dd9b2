// nce encode --model CKPT|FOLDER (--features X.npy | --tokens T.npy | --text FILE) [--mask M.npy] --out E.npy
//            [--tokenizer MODEL] [--max-length N] [--prompt query|passage|none] [--batch-size N]
//            [--dtype float32|float64] [--device cpu|cuda]
//
// Embeds every row of the input with a checkpoint's model in eval mode (no dropout) and
// writes the L2-normalised embeddings [B, out] to E.npy. --model FOLDER reads a
// sentence-transformers folder (nn/sentence_transformers_folder.h) as a bert, which takes
// --tokens (the ids of the folder's own tokenizer); its notes go to stderr. A sig_predictor takes features
// [B, T, in_dim] (float); a text_encoder takes token ids [B, T] (int64), or texts: --text
// FILE holds one text per line (UTF-8), tokenized with the tokenizer.model beside the
// checkpoint (or --tokenizer) and cut at --max-length tokens (default: the model's max_len).
// --prompt query (or passage) writes the model's query (passage) prompt, from its nce_config,
// before each text, as training did; its tokens count towards --max-length. Without --prompt
// the texts are read as they are, and a model that carries prompts says so on stderr.
// The mask [B, T] (int64 or float, 1 = token, 0 = padding) defaults to all tokens. Everything
// is read and checked, and every batch computed, before the output is written; errors are
// one line. --device cuda moves the model (Module::to) and each batch (Tensor::to) to the GPU
// and the embeddings back; without a usable GPU it stops first with one line
// (retrieval/settings/device_name.h).
#include <fmt/core.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "apps/commands.h"
#include "retrieval/settings/device_name.h"
#include "retrieval/settings/model_names.h"
#include "retrieval/model/text_model.h"
#include "retrieval/model/tokenizer_fingerprint.h"
#include "data/reader_support.h"
#include "data/text_cleaning.h"
#include "data/tokenizer.h"
#include "engine/nce.h"
#include "nn/checkpoint.h"
#include "nn/sentence_transformers_folder.h"

namespace nce::apps {
namespace {

struct EncodeOptionsCli {
    std::string model_path;
    std::string features_path;
    std::string tokens_path;
    std::string text_path;
    std::string tokenizer_path;  // default: tokenizer.model beside the model
    int64_t max_length = 0;      // --text: tokens per text; 0: the model's max_len
    std::string prompt;          // --text: "query", "passage" or "none"; empty: not given (none)
    int64_t truncate_dim = 0;    // keep each embedding's first N numbers, re-normalised; 0: all
    std::string mask_path;
    std::string out_path;
    int64_t batch_size = 256;
    std::string dtype = "float32";
    std::string device = "cpu";
};

// The input the model's kind takes, checked against its config.
Tensor read_model_input(const EncodeOptionsCli& options, const nn::ModelConfig& config, Dtype dtype) {
    bool features_given = !options.features_path.empty();
    if (config.kind == "sig_predictor") {
        NCE_CHECK(features_given, "encode: the model in '{}' is a sig_predictor, which takes features [B, T, {}]: pass "
                  "--features X.npy instead of --tokens", options.model_path, config.in_dim);
        Tensor features = read_npy(options.features_path);
        NCE_CHECK(is_floating(features.dtype()), "encode: '{}': features must be float32 or float64, got {}",
                  options.features_path, dtype_name(features.dtype()));
        NCE_CHECK(features.rank() == 3 && features.size(2) == config.in_dim,
                  "encode: '{}': features have shape {}; the model takes [B, T, {}] (in_dim {})", options.features_path,
                  shape_string(features.shape()), config.in_dim, config.in_dim);
        return features.to(dtype);
    }
    NCE_CHECK(!features_given, "encode: the model in '{}' is a {}, which takes token ids [B, T]: pass --tokens T.npy "
              "instead of --features", options.model_path, config.kind);
    Tensor tokens = read_npy(options.tokens_path);
    NCE_CHECK(tokens.dtype() == Dtype::Int64, "encode: '{}': token ids must be int64, got {}; save them with "
              "ids.astype(np.int64)", options.tokens_path, dtype_name(tokens.dtype()));
    NCE_CHECK(tokens.rank() == 2, "encode: '{}': token ids have shape {}; the model takes [B, T]", options.tokens_path,
              shape_string(tokens.shape()));
    NCE_CHECK(tokens.size(1) <= config.max_len, "encode: '{}': sequences of {} tokens are longer than the model's "
              "max_len {}", options.tokens_path, tokens.size(1), config.max_len);
    const int64_t* ids = tokens.data<int64_t>();
    for (int64_t i = 0; i < tokens.numel(); ++i)
        NCE_CHECK(ids[i] >= 0 && ids[i] < config.vocab_size,
                  "encode: '{}': token id {} at row {}, position {} is outside the vocabulary [0, {})",
                  options.tokens_path, ids[i], i / tokens.size(1), i % tokens.size(1), config.vocab_size);
    return tokens;
}

// --text FILE: one text per line ("\r\n" or "\n"), each non-empty and valid UTF-8.
std::vector<std::string> read_text_lines(const std::string& path) {
    std::string contents = data::read_source_file(path);
    std::vector<std::string> texts;
    size_t start = 0;
    int64_t line = 0;
    while (start < contents.size()) {
        size_t end = contents.find('\n', start);
        if (end == std::string::npos) end = contents.size();
        std::string text = contents.substr(start, end - start);
        if (!text.empty() && text.back() == '\r') text.pop_back();
        ++line;
        NCE_CHECK(data::is_valid_utf8(text), "encode: --text {}: line {} is not valid UTF-8; the file must be UTF-8 text",
                  path, line);
        NCE_CHECK(!data::collapse_whitespace(text).empty(),
                  "encode: --text {}: line {} is empty; put one text on each line", path, line);
        texts.push_back(std::move(text));
        start = end + 1;
    }
    return texts;
}

// --prompt: the text to write before each line (the model's query or passage prompt), or
// none. Without --prompt, a model that carries prompts gets one note on stderr.
std::string prompt_of(const EncodeOptionsCli& options, const nn::ModelConfig& config) {
    NCE_CHECK(options.prompt.empty() || options.prompt == "query" || options.prompt == "passage" ||
                  options.prompt == "none",
              "encode: --prompt must be query, passage or none, got '{}'", options.prompt);
    if (options.prompt == "query") return config.query_prompt;
    if (options.prompt == "passage") return config.passage_prompt;
    if (options.prompt.empty() && (!config.query_prompt.empty() || !config.passage_prompt.empty()))
        fmt::print(stderr, "encode: note: the model reads queries after \"{}\" and passages after \"{}\"; the texts "
                   "are encoded as they are (pass --prompt query or --prompt passage to apply one, --prompt none to "
                   "keep this)\n", config.query_prompt, config.passage_prompt);
    return "";
}

// --text: the texts (after --prompt's prompt) as token ids and mask [B, T] with the model's tokenizer.
data::EncodedBatch read_texts(const EncodeOptionsCli& options, const nn::EmbeddingModel& model) {
    const nn::ModelConfig& config = model.config();
    NCE_CHECK(config.kind != "sig_predictor", "encode: the model in '{}' is a {}, which does not read text: pass "
              "--features X.npy", options.model_path, config.kind);
    // The tokenizer: --tokenizer; a model folder's own; tokenizer.model beside a checkpoint, or
    // the pretrained tokenizer's folder a fine-tuning run keeps beside it (tokenizer/).
    namespace fs = std::filesystem;
    std::string tokenizer_path = options.tokenizer_path;
    fs::path beside = fs::path(options.model_path).parent_path();
    if (tokenizer_path.empty() && fs::is_directory(options.model_path)) tokenizer_path = options.model_path;
    if (tokenizer_path.empty()) tokenizer_path = retrieval::tokenizer_beside(beside.string());
    if (tokenizer_path.empty()) tokenizer_path = (beside / "tokenizer.model").string();
    NCE_CHECK(fs::exists(tokenizer_path), "encode: tokenizer {}: no such file; the model's "
              "token ids need the tokenizer it was trained with (pass --tokenizer, or keep tokenizer.model beside the "
              "model)", tokenizer_path);
    data::Tokenizer tokenizer = data::Tokenizer::load(tokenizer_path);
    retrieval::check_tokenizer_matches(tokenizer, model, options.model_path);
    int64_t max_length = options.max_length == 0 ? config.max_len : options.max_length;
    NCE_CHECK(max_length >= 1 && max_length <= config.max_len, "encode: --max-length must be in 1..{} (the model's "
              "max_len), got {}", config.max_len, max_length);
    return tokenizer.encode(retrieval::with_prompt(prompt_of(options, config), read_text_lines(options.text_path)),
                            max_length);
}

// The mask from --mask, or all tokens valid. Values are 0 or 1; every row needs a token.
Tensor read_mask(const EncodeOptionsCli& options, const Tensor& input) {
    Shape expected{input.size(0), input.size(1)};
    if (options.mask_path.empty()) return Tensor::full(expected, 1.0, Dtype::Int64);
    Tensor mask = read_npy(options.mask_path);
    NCE_CHECK(mask.shape() == expected, "encode: '{}': the mask has shape {} but the input is {}: it must be [B, T] = {}",
              options.mask_path, shape_string(mask.shape()), shape_string(input.shape()), shape_string(expected));
    std::vector<double> values = mask.to_vector();
    int64_t length = expected[1];
    for (int64_t row = 0; row < expected[0]; ++row) {
        bool any_token = false;
        for (int64_t position = 0; position < length; ++position) {
            double value = values[row * length + position];
            NCE_CHECK(value == 0.0 || value == 1.0, "encode: '{}': mask value {} at row {}, position {}; use 1 for a "
                      "token and 0 for padding", options.mask_path, value, row, position);
            any_token = any_token || value == 1.0;
        }
        NCE_CHECK(any_token, "encode: '{}': row {} of the mask has no token (all 0); every row needs at least one",
                  options.mask_path, row);
    }
    return mask;
}

int run(EncodeOptionsCli options) {
    NCE_CHECK(!options.model_path.empty(), "encode: --model CKPT.safetensors is required");
    options.model_path = retrieval::resolve_model_name(options.model_path, "encode: --model");
    int inputs = !options.features_path.empty() + !options.tokens_path.empty() + !options.text_path.empty();
    NCE_CHECK(inputs == 1, "encode: pass exactly one of --features X.npy (sig_predictor), --tokens T.npy or --text "
              "FILE (text_encoder)");
    NCE_CHECK(options.text_path.empty() || options.mask_path.empty(),
              "encode: --mask goes with --tokens; with --text the tokenizer makes the mask");
    NCE_CHECK(!options.text_path.empty() || options.prompt.empty(),
              "encode: --prompt goes with --text (a prompt is text written before each line)");
    NCE_CHECK(!options.out_path.empty(), "encode: --out E.npy is required (where the embeddings go)");
    NCE_CHECK(options.batch_size >= 1, "encode: --batch-size must be at least 1, got {}", options.batch_size);
    Dtype dtype = parse_dtype(options.dtype);
    const Device device = retrieval::require_device(options.device);

    // 1. The model, the input and the mask, all checked before any computing.
    // A folder is a sentence-transformers (or bare Hugging Face) model; what the reader assumed
    // or left out goes to stderr, one note a line.
    std::unique_ptr<nn::EmbeddingModel> model;
    if (std::filesystem::is_directory(options.model_path)) {
        nn::PretrainedModel pretrained = nn::load_sentence_transformers(options.model_path, dtype);
        for (const std::string& note : pretrained.notes) fmt::print(stderr, "encode: note: {}\n", note);
        model = std::move(pretrained.model);
    } else {
        model = nn::load_model(options.model_path, dtype);
    }
    Tensor input, mask;
    if (!options.text_path.empty()) {
        data::EncodedBatch encoded = read_texts(options, *model);
        input = encoded.ids;
        mask = encoded.mask;
    } else {
        input = read_model_input(options, model->config(), dtype);
        NCE_CHECK(input.size(0) > 0 && input.size(1) > 0, "encode: '{}': the input {} has no rows or no positions",
                  options.features_path.empty() ? options.tokens_path : options.features_path,
                  shape_string(input.shape()));
        mask = read_mask(options, input);
    }

    // 2. Eval mode (dropout off), no graph, batch by batch.
    model->train(false);
    model->to(device);
    NoGradGuard no_graph;
    std::vector<Tensor> embeddings;
    int64_t rows = input.size(0);
    for (int64_t start = 0; start < rows; start += options.batch_size) {
        int64_t end = std::min(rows, start + options.batch_size);
        Var batch = model->encode(slice(input, 0, start, end).to(device), slice(mask, 0, start, end).to(device), nullptr);
        embeddings.push_back(batch.value().to(Device::CPU));
    }
    Tensor result = embeddings.size() == 1 ? embeddings.front() : concat(embeddings, 0);
    if (options.truncate_dim != 0) result = retrieval::truncate_embeddings(result, options.truncate_dim);
    NCE_CHECK(all_finite(result), "encode: the embeddings are not all finite; nothing was written");

    // 3. One atomic write.
    write_npy(options.out_path, result);
    fmt::print("encode: {} rows -> '{}' {} {}\n", rows, options.out_path, shape_string(result.shape()),
               dtype_name(result.dtype()));
    return 0;
}

}  // namespace

void add_encode_command(CLI::App& app, int& exit_code) {
    auto options = std::make_shared<EncodeOptionsCli>();
    CLI::App* command = app.add_subcommand("encode", "Embed inputs with a checkpoint's model (eval mode) into a .npy file");
    command->add_option("--model", options->model_path, "Model or training checkpoint (.safetensors with nce_config), a sentence-transformers folder, or the name of one scripts/pretrained.sh installed");
    command->add_option("--features", options->features_path, "Features [B, T, in_dim] .npy (float), for a sig_predictor");
    command->add_option("--tokens", options->tokens_path, "Token ids [B, T] .npy (int64), for a text_encoder");
    command->add_option("--text", options->text_path, "Texts, one per line (UTF-8), for a text_encoder");
    command->add_option("--tokenizer", options->tokenizer_path, "With --text: the tokenizer.model (default: the one "
                        "beside --model)");
    command->add_option("--max-length", options->max_length, "With --text: tokens per text (default: the model's "
                        "max_len)");
    command->add_option("--prompt", options->prompt, "With --text: write the model's query or passage prompt (from "
                        "its config) before each text, as training did: query, passage or none (default: none; its "
                        "tokens count towards --max-length)");
    command->add_option("--mask", options->mask_path, "Mask [B, T] .npy (int64 or float; 1 = token, 0 = padding); "
                        "default: every position is a token");
    command->add_option("--truncate-dim", options->truncate_dim, "Keep each embedding's first N numbers, re-normalised "
                        "(for a model trained with matryoshka); default: all");
    command->add_option("--out", options->out_path, "Where the embeddings [B, out] go (.npy)");
    command->add_option("--batch-size", options->batch_size, "Rows per forward pass (default 256)");
    command->add_option("--dtype", options->dtype, "Compute and write in float32 (default) or float64");
    command->add_option("--device", options->device, "Compute on cpu (default) or cuda (needs a GPU and a build with "
                        "CUDA)");
    command->callback([options, &exit_code] { exit_code = run(*options); });
}

}  // namespace nce::apps
