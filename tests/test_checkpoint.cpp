// safetensors files and checkpoints: files written by hand read back right, files written
// by nce have the layout the format prescribes, malformed files give one line naming the
// file and the tensor, writes are atomic, saved models give the same embeddings when
// loaded, and PyTorch's models (tests/fixtures/torch_reference/) give PyTorch's embeddings.
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>

#include "engine/json_nesting.h"
#include "nn/checkpoint.h"
#include "nn/safetensors.h"
#include "tests/test_helpers.h"

namespace nce::testing {
namespace {

namespace fs = std::filesystem;
using nn::SafetensorsFile;

// ---- files ----

void write_bytes(const std::string& path, const std::string& bytes) {
    std::ofstream out(path, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    REQUIRE(out.good());
}

std::string read_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The raw little-endian bytes of some values (the test machine is little-endian).
template <typename T>
std::string raw_bytes(const std::vector<T>& values) {
    return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

// A safetensors file put together by hand: the 8-byte length, the header text, the data.
std::string safetensors_bytes(const std::string& header, const std::string& data) {
    uint64_t length = header.size();
    return raw_bytes(std::vector<uint64_t>{length}) + header + data;
}

// ---- reading files written by hand ----

TEST_CASE("safetensors: a file written by hand reads back its tensors, dtypes, shapes and metadata") {
    TemporaryDirectory folder;
    // The data holds, in this order: b (F64 [2]), a (F32 [2, 3]), c (I64 [], a scalar),
    // empty (F32 [0, 4]); the header lists them in yet another order and ends in spaces.
    std::vector<double> b = {1e300, -0.25};
    std::vector<float> a = {0.5f, -1.5f, 2.0f, 3.25f, -0.0f, 7.0f};
    std::vector<int64_t> c = {-9'000'000'000'000LL};
    std::string header =
        R"({"c":{"dtype":"I64","shape":[],"data_offsets":[40,48]},)"
        R"("__metadata__":{"format":"pt","note":"hand made"},)"
        R"("a":{"dtype":"F32","shape":[2,3],"data_offsets":[16,40]},)"
        R"("empty":{"dtype":"F32","shape":[0,4],"data_offsets":[48,48]},)"
        R"("b":{"dtype":"F64","shape":[2],"data_offsets":[0,16]}}    )";
    std::string path = folder.file("hand.safetensors");
    write_bytes(path, safetensors_bytes(header, raw_bytes(b) + raw_bytes(a) + raw_bytes(c)));

    SafetensorsFile file = nn::read_safetensors(path);
    REQUIRE(file.tensors.size() == 4);
    CHECK(file.metadata == std::map<std::string, std::string>{{"format", "pt"}, {"note", "hand made"}});
    const Tensor& read_a = file.tensors.at("a");
    CHECK(read_a.dtype() == Dtype::Float32);
    CHECK(read_a.shape() == Shape{2, 3});
    for (int64_t i = 0; i < 6; ++i) CHECK(read_a.data<float>()[i] == a[i]);
    CHECK(std::signbit(read_a.data<float>()[4]));  // -0.0 kept bit for bit
    const Tensor& read_b = file.tensors.at("b");
    CHECK(read_b.dtype() == Dtype::Float64);
    CHECK(read_b.shape() == Shape{2});
    CHECK(read_b.data<double>()[0] == 1e300);
    CHECK(read_b.data<double>()[1] == -0.25);
    const Tensor& read_c = file.tensors.at("c");
    CHECK(read_c.dtype() == Dtype::Int64);
    CHECK(read_c.shape() == Shape{});
    CHECK(read_c.data<int64_t>()[0] == c[0]);
    CHECK(file.tensors.at("empty").shape() == Shape{0, 4});
}

TEST_CASE("safetensors: a file with no tensors and no metadata reads as empty") {
    TemporaryDirectory folder;
    std::string path = folder.file("empty.safetensors");
    write_bytes(path, safetensors_bytes("{}      ", ""));
    SafetensorsFile file = nn::read_safetensors(path);
    CHECK(file.tensors.empty());
    CHECK(file.metadata.empty());
}

// ---- the layout nce writes ----

TEST_CASE("safetensors: write sorts tensors by name, packs their bytes in that order and pads the header to 8") {
    TemporaryDirectory folder;
    std::string path = folder.file("written.safetensors");
    std::map<std::string, Tensor> tensors = {
        {"zeta", Tensor::from_vector({1, 2, 3}, {3}, Dtype::Float32)},
        {"alpha", Tensor::from_indices({4, -5}, {2, 1})},
        {"mid", Tensor::from_vector({0.125}, {}, Dtype::Float64)},
    };
    nn::write_safetensors(path, tensors, {{"purpose", "layout test"}});

    // Take the file apart by hand.
    std::string bytes = read_bytes(path);
    REQUIRE(bytes.size() >= 8);
    uint64_t header_length = 0;
    std::memcpy(&header_length, bytes.data(), 8);
    CHECK(header_length % 8 == 0);
    REQUIRE(8 + header_length <= bytes.size());
    std::string header_text = bytes.substr(8, header_length);
    nlohmann::ordered_json header_in_order = nlohmann::ordered_json::parse(header_text);
    nlohmann::json header = nlohmann::json::parse(header_text);
    CHECK(header["__metadata__"] == nlohmann::json{{"purpose", "layout test"}});
    std::vector<std::string> names;
    for (const auto& [key, value] : header_in_order.items())
        if (key != "__metadata__") names.push_back(key);
    CHECK(names == std::vector<std::string>{"alpha", "mid", "zeta"});
    CHECK(header["alpha"] == nlohmann::json::parse(R"({"dtype":"I64","shape":[2,1],"data_offsets":[0,16]})"));
    CHECK(header["mid"] == nlohmann::json::parse(R"({"dtype":"F64","shape":[],"data_offsets":[16,24]})"));
    CHECK(header["zeta"] == nlohmann::json::parse(R"({"dtype":"F32","shape":[3],"data_offsets":[24,36]})"));
    std::string data = bytes.substr(8 + header_length);
    CHECK(data == raw_bytes(std::vector<int64_t>{4, -5}) + raw_bytes(std::vector<double>{0.125}) +
                      raw_bytes(std::vector<float>{1, 2, 3}));
}

TEST_CASE("safetensors: F32, F64 and I64 tensors and metadata round-trip bit for bit") {
    TemporaryDirectory folder;
    Generator generator(7);
    std::map<std::string, Tensor> tensors = {
        {"encoder.layers.0.linear1.weight", generator.normal({5, 3}, Dtype::Float32)},
        {"encoder.layers.0.linear1.bias", generator.normal({5}, Dtype::Float64)},
        {"optimizer.step", Tensor::from_indices({12345678901LL}, {})},
        {"nothing", Tensor::zeros({3, 0}, Dtype::Float64)},
    };
    std::map<std::string, std::string> metadata = {{"nce_config", R"({"kind": "text_encoder"})"},
                                                   {"unicode", "τ = 0.07 — ok"},
                                                   {"empty", ""}};
    std::string path = folder.file("round_trip.safetensors");
    nn::write_safetensors(path, tensors, metadata);
    SafetensorsFile file = nn::read_safetensors(path);
    CHECK(file.metadata == metadata);
    REQUIRE(file.tensors.size() == tensors.size());
    for (const auto& [name, tensor] : tensors) {
        CAPTURE(name);
        const Tensor& read = file.tensors.at(name);
        CHECK(read.dtype() == tensor.dtype());
        CHECK(read.shape() == tensor.shape());
        CHECK(std::memcmp(read.raw_data(), tensor.raw_data(), tensor.nbytes()) == 0);
    }
}

TEST_CASE("safetensors: F16 and BF16 tensors are read widened to float32, every value exactly") {
    TemporaryDirectory folder;
    std::string path = folder.file("half.safetensors");
    // F16: 1, -2.5, 65504 (the largest), 2^-24 (the smallest subnormal), -0, +inf.
    std::vector<uint16_t> halves = {0x3C00, 0xC100, 0x7BFF, 0x0001, 0x8000, 0x7C00};
    // BF16: 1, -3.140625, 2^-133 (a subnormal), the largest finite (0x7F7F).
    std::vector<uint16_t> bfloats = {0x3F80, 0xC049, 0x0001, 0x7F7F};
    write_bytes(path, safetensors_bytes(R"({"b":{"dtype":"BF16","shape":[2,2],"data_offsets":[0,8]},)"
                                        R"("h":{"dtype":"F16","shape":[6],"data_offsets":[8,20]}})",
                                        raw_bytes(bfloats) + raw_bytes(halves)));
    SafetensorsFile file = nn::read_safetensors(path);
    const Tensor& h = file.tensors.at("h");
    const Tensor& b = file.tensors.at("b");
    CHECK(h.dtype() == Dtype::Float32);
    CHECK(b.dtype() == Dtype::Float32);
    CHECK(b.shape() == Shape{2, 2});
    std::vector<double> hv = h.to_vector(), bv = b.to_vector();
    CHECK(hv[0] == 1.0);
    CHECK(hv[1] == -2.5);
    CHECK(hv[2] == 65504.0);
    CHECK(hv[3] == std::ldexp(1.0, -24));
    CHECK(hv[4] == 0.0);
    CHECK(std::signbit(hv[4]));
    CHECK(std::isinf(hv[5]));
    CHECK(bv[0] == 1.0);
    CHECK(bv[1] == -3.140625);
    CHECK(bv[2] == std::ldexp(1.0, -133));
    CHECK(bv[3] == static_cast<double>(std::bit_cast<float>(uint32_t{0x7F7F0000})));
    // The header alone says what the tensors are read as.
    CHECK(nn::read_safetensors_header(path).tensors.at("h").dtype == Dtype::Float32);
}

// ---- malformed files ----

TEST_CASE("safetensors: each malformed file is a one-line error naming the file and, where one is at fault, the tensor") {
    TemporaryDirectory folder;
    std::string path = folder.file("bad.safetensors");
    std::string eight_floats = raw_bytes(std::vector<float>(8, 1.0f));  // 32 bytes
    auto header_with = [](const std::string& entry) { return "{\"w\":" + entry + "}"; };
    struct Case {
        const char* what;
        std::string bytes;
        std::vector<std::string> fragments;  // each must be in the message
    };
    std::vector<Case> cases = {
        {"shorter than the length field", "abc", {"bad.safetensors", "shorter than the 8-byte header length"}},
        {"header length past the end", raw_bytes(std::vector<uint64_t>{1000}) + "{}", {"bad.safetensors", "1000", "runs past"}},
        {"header not JSON", safetensors_bytes("{\"w\": [1, 2", ""), {"bad.safetensors", "not valid JSON"}},
        {"header not an object", safetensors_bytes("[1, 2]", ""), {"bad.safetensors", "must be a JSON object"}},
        {"name given twice",
         safetensors_bytes(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},)"
                           R"("w":{"dtype":"F32","shape":[4],"data_offsets":[16,32]}})", eight_floats),
         {"bad.safetensors", "'w' twice"}},
        {"metadata key given twice", safetensors_bytes(R"({"__metadata__":{"step":"3","step":"4"}})", ""),
         {"bad.safetensors", "'step' twice"}},
        {"a tensor's field given twice",
         safetensors_bytes(header_with(R"({"dtype":"F32","shape":[8],"shape":[4],"data_offsets":[0,32]})"), eight_floats),
         {"bad.safetensors", "'shape' twice"}},
        {"metadata value not a string", safetensors_bytes(R"({"__metadata__":{"step":3}})", ""),
         {"bad.safetensors", "'step'", "string"}},
        {"entry not an object", safetensors_bytes(header_with("[1]"), ""), {"bad.safetensors", "'w'", "must be an object"}},
        {"no data_offsets", safetensors_bytes(header_with(R"({"dtype":"F32","shape":[8]})"), eight_floats),
         {"bad.safetensors", "'w'", "data_offsets"}},
        {"unknown dtype", safetensors_bytes(header_with(R"({"dtype":"Q7","shape":[8],"data_offsets":[0,32]})"), eight_floats),
         {"bad.safetensors", "'w'", "unknown dtype 'Q7'"}},
        {"BF16 of the wrong length", safetensors_bytes(header_with(R"({"dtype":"BF16","shape":[8],"data_offsets":[0,32]})"), eight_floats),
         {"bad.safetensors", "'w'", "BF16 needs 16 bytes"}},
        {"I32 unsupported", safetensors_bytes(header_with(R"({"dtype":"I32","shape":[8],"data_offsets":[0,32]})"), eight_floats),
         {"bad.safetensors", "'w'", "I32", "F32, F64, I64, F16 and BF16"}},
        {"negative size", safetensors_bytes(header_with(R"({"dtype":"F32","shape":[-8],"data_offsets":[0,32]})"), eight_floats),
         {"bad.safetensors", "'w'", "[-8]"}},
        {"offsets reversed", safetensors_bytes(header_with(R"({"dtype":"F32","shape":[0],"data_offsets":[32,0]})"), eight_floats),
         {"bad.safetensors", "'w'", "[32, 0]"}},
        {"offsets out of range", safetensors_bytes(header_with(R"({"dtype":"F32","shape":[16],"data_offsets":[0,64]})"), eight_floats),
         {"bad.safetensors", "'w'", "[0, 64]", "32 data bytes"}},
        {"size does not match dtype and shape",
         safetensors_bytes(header_with(R"({"dtype":"F64","shape":[8],"data_offsets":[0,32]})"), eight_floats),
         {"bad.safetensors", "'w'", "[8] F64 needs 64 bytes", "give 32"}},
        {"overlapping tensors",
         safetensors_bytes(R"({"v":{"dtype":"F32","shape":[6],"data_offsets":[0,24]},)"
                           R"("w":{"dtype":"F32","shape":[4],"data_offsets":[16,32]}})", eight_floats),
         {"bad.safetensors", "'w'", "overlaps tensor 'v'"}},
        {"gap between tensors",
         safetensors_bytes(R"({"v":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                           R"("w":{"dtype":"F32","shape":[4],"data_offsets":[16,32]}})", eight_floats),
         {"bad.safetensors", "[8, 16)", "'w'", "no tensor"}},
        {"bytes after the last tensor",
         safetensors_bytes(header_with(R"({"dtype":"F32","shape":[4],"data_offsets":[0,16]})"), eight_floats),
         {"bad.safetensors", "last 16 data bytes"}},
    };
    for (const Case& bad : cases) {
        CAPTURE(bad.what);
        write_bytes(path, bad.bytes);
        bool thrown = false;
        try {
            nn::read_safetensors(path);
        } catch (const Error& error) {
            thrown = true;
            std::string message = error.what();
            CHECK_MESSAGE(message.find('\n') == std::string::npos, "message was: " << message);
            for (const std::string& fragment : bad.fragments)
                CHECK_MESSAGE(message.find(fragment) != std::string::npos, "no '" << fragment << "' in: " << message);
        }
        CHECK_MESSAGE(thrown, "no error for: " << bad.what);
    }
    CHECK_ERROR_MENTIONS(nn::read_safetensors(folder.file("missing.safetensors")), "missing.safetensors");
    CHECK_ERROR_MENTIONS(nn::read_safetensors(folder.path.string()), "is a directory");
}

// ---- atomic writes ----

TEST_CASE("safetensors: a write leaves only the finished file; a refused write leaves the old one untouched") {
    TemporaryDirectory folder;
    std::string path = folder.file("model.safetensors");
    std::map<std::string, Tensor> first = {{"w", Tensor::from_vector({1, 2}, {2}, Dtype::Float32)}};
    nn::write_safetensors(path, first);
    CHECK(folder.entries() == std::vector<std::string>{"model.safetensors"});
    std::string first_bytes = read_bytes(path);

    // Overwriting replaces the whole file and leaves no temporary beside it.
    nn::write_safetensors(path, {{"w", Tensor::from_vector({3, 4, 5}, {3}, Dtype::Float64)}});
    CHECK(folder.entries() == std::vector<std::string>{"model.safetensors"});
    CHECK(nn::read_safetensors(path).tensors.at("w").shape() == Shape{3});

    // Refused writes: the file keeps its contents, and nothing else appears.
    nn::write_safetensors(path, first);
    CHECK_ERROR_MENTIONS(nn::write_safetensors(path, {{"w", Tensor()}}), "tensor 'w' is undefined");
    CHECK_ERROR_MENTIONS(nn::write_safetensors(path, {{"__metadata__", first.at("w")}}), "reserved");
    CHECK_ERROR_MENTIONS(nn::write_safetensors(path, {{"", first.at("w")}}), "empty name");
    CHECK(read_bytes(path) == first_bytes);
    CHECK(folder.entries() == std::vector<std::string>{"model.safetensors"});

    // A folder that does not exist: the error names the path.
    CHECK_ERROR_MENTIONS(nn::write_safetensors(folder.file("no/such/folder/x.safetensors"), first),
                         "no/such/folder/x.safetensors");
    CHECK(folder.entries() == std::vector<std::string>{"model.safetensors"});
}

// A pid that no process has: that of a child which has exited and been reaped.
pid_t pid_of_a_finished_process() {
    pid_t pid = -1;
    char name[] = "true";
    char* argv[] = {name, nullptr};
    REQUIRE(posix_spawnp(&pid, "true", nullptr, nullptr, argv, environ) == 0);
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    return pid;
}

TEST_CASE("safetensors: a write removes its path's temporaries of writers that died, and no other file") {
    TemporaryDirectory folder;
    std::string path = folder.file("model.safetensors");
    std::string dead = std::to_string(pid_of_a_finished_process());
    std::string alive = std::to_string(::getppid());  // whoever started this test waits for it
    for (const std::string& name : {"model.safetensors.tmp-" + dead, "model.safetensors.tmp-" + alive,
                                    "other.safetensors.tmp-" + dead, "model.safetensors.tmp-" + dead + ".bak",
                                    "model.safetensors.tmp-x" + dead})
        write_bytes(folder.file(name), "a part of a checkpoint");

    nn::write_safetensors(path, {{"w", Tensor::from_vector({1, 2}, {2}, Dtype::Float32)}});
    // Kept: a live writer's temporary (its rename is to come), another path's, and names that
    // are no writer's temporary.
    std::vector<std::string> expected = {"model.safetensors", "model.safetensors.tmp-" + alive,
                                         "model.safetensors.tmp-" + dead + ".bak", "model.safetensors.tmp-x" + dead,
                                         "other.safetensors.tmp-" + dead};
    std::sort(expected.begin(), expected.end());
    CHECK(folder.entries() == expected);
}

// ---- model configs and checkpoints ----

nn::ModelConfig small_sig_predictor() {
    nn::ModelConfig config;
    config.kind = "sig_predictor";
    config.in_dim = 6;
    config.out_dim = 4;
    config.d_model = 8;
    config.nhead = 2;
    config.dim_feedforward = 16;
    config.num_layers = 2;
    config.dropout = 0.1;
    return config;
}

nn::ModelConfig small_text_encoder() {
    nn::ModelConfig config;
    config.kind = "text_encoder";
    config.vocab_size = 23;
    config.max_len = 9;
    config.d_model = 8;
    config.nhead = 2;
    config.dim_feedforward = 12;
    config.num_layers = 2;
    config.activation = "gelu";
    config.norm_first = true;
    config.out_dim = 5;
    return config;
}

// The same with the lexical head (nn/text_encoder.h): its lexical_norm and lexical_proj.
nn::ModelConfig small_lexical_text_encoder() {
    nn::ModelConfig config = small_text_encoder();
    config.lexical_dim = 6;
    return config;
}

// The same with the term-weight head: its term_norm and term_weight.
nn::ModelConfig small_term_text_encoder() {
    nn::ModelConfig config = small_text_encoder();
    config.term_weights = true;
    return config;
}

// A mask [B, T] with left padding, a gap, a full row and a one-token row.
Tensor awkward_mask(int64_t rows, int64_t length) {
    std::vector<int64_t> values(rows * length, 1);
    for (int64_t row = 0; row < rows; ++row)
        for (int64_t position = 0; position < length; ++position) {
            bool left_padding = position < row % 3;
            bool gap = row % 4 == 1 && position == length - 2;
            bool one_token = row == rows - 1 && position != length - 1;
            if (left_padding || gap || one_token) values[row * length + position] = 0;
        }
    return Tensor::from_indices(values, {rows, length});
}

// Inputs a model of this config takes: features [B, T, in_dim] or token ids [B, T].
Tensor model_input(const nn::ModelConfig& config, int64_t rows, int64_t length, Generator& generator) {
    if (config.kind == "sig_predictor") return generator.normal({rows, length, config.in_dim}, Dtype::Float64);
    std::vector<int64_t> ids(rows * length);
    for (int64_t& id : ids) id = generator.next_index(config.vocab_size);
    return Tensor::from_indices(ids, {rows, length});
}

// Moves every parameter off its initial value (LayerNorm's ones, zero biases), so that a
// parameter left unloaded, or loaded into the wrong place, changes the embeddings.
void randomise_parameters(nn::EmbeddingModel& model, Generator& generator) {
    for (auto& [name, parameter] : model.named_parameters())
        parameter->set_value(parameter->value() + generator.normal(parameter->shape(), parameter->dtype(), 0.0, 0.3));
}

// Eval-mode embeddings of `input` (features converted to the model's dtype).
Tensor embed(nn::EmbeddingModel& model, const Tensor& input, const Tensor& mask, Dtype dtype) {
    model.train(false);
    NoGradGuard no_graph;
    Tensor converted = input.dtype() == Dtype::Int64 ? input : input.to(dtype);
    return model.encode(converted, mask, nullptr).value();
}

TEST_CASE("checkpoint: a config survives JSON, and bad configs are errors naming the key") {
    for (nn::ModelConfig config : {small_sig_predictor(), small_text_encoder(), small_lexical_text_encoder(), small_term_text_encoder()}) {
        config.learnable_temperature = true;
        config.min_temperature = 0.02;
        config.layer_norm_eps = 1e-6;
        std::string text = nn::config_to_json(config);
        nn::ModelConfig back = nn::config_from_json(text, "test");
        CHECK(nn::config_to_json(back) == text);
        CHECK(back.kind == config.kind);
        CHECK(back.layer_norm_eps == config.layer_norm_eps);
        CHECK(back.norm_first == config.norm_first);
        CHECK(back.learnable_temperature);
    }
    nlohmann::json json = nlohmann::json::parse(nn::config_to_json(small_text_encoder()));
    // The temperature keys are optional; they default to no learnable temperature.
    nlohmann::json without_temperature = json;
    for (const char* key : {"learnable_temperature", "min_temperature", "max_temperature"}) without_temperature.erase(key);
    CHECK_FALSE(nn::config_from_json(without_temperature.dump(), "test").learnable_temperature);
    // lexical_dim is written only for a lexical head, and read as 0 when absent.
    CHECK_FALSE(json.contains("lexical_dim"));
    CHECK(nn::config_from_json(json.dump(), "test").lexical_dim == 0);
    CHECK(nlohmann::json::parse(nn::config_to_json(small_lexical_text_encoder())).at("lexical_dim") == 6);
    nlohmann::json lexical_predictor = nlohmann::json::parse(nn::config_to_json(small_sig_predictor()));
    lexical_predictor["lexical_dim"] = 4;
    CHECK_ERROR_MENTIONS(nn::validate_config(nn::config_from_json(lexical_predictor.dump(), "test")),
                         "lexical_dim is a text_encoder's");
    // term_weights likewise: written only when on, false when absent, a text_encoder's alone; a
    // max-pooled head may sit beside it.
    CHECK_FALSE(json.contains("term_weights"));
    CHECK_FALSE(nn::config_from_json(json.dump(), "test").term_weights);
    CHECK(nlohmann::json::parse(nn::config_to_json(small_term_text_encoder())).at("term_weights") == true);
    nlohmann::json both = nlohmann::json::parse(nn::config_to_json(small_term_text_encoder()));
    both["lexical_dim"] = 4;
    CHECK(nn::validate_config(nn::config_from_json(both.dump(), "test")).lexical_dim == 4);
    nlohmann::json term_predictor = nlohmann::json::parse(nn::config_to_json(small_sig_predictor()));
    term_predictor["term_weights"] = true;
    CHECK_ERROR_MENTIONS(nn::validate_config(nn::config_from_json(term_predictor.dump(), "test")),
                         "term_weights is a text_encoder's");

    nlohmann::json missing = json;
    missing.erase("d_model");
    CHECK_ERROR_MENTIONS(nn::config_from_json(missing.dump(), "file.safetensors"), "file.safetensors: nce_config has no 'd_model'");
    nlohmann::json unknown = json;
    unknown["d_modle"] = 8;
    CHECK_ERROR_MENTIONS(nn::config_from_json(unknown.dump(), "test"), "unknown key 'd_modle'");
    nlohmann::json wrong_type = json;
    wrong_type["nhead"] = "two";
    CHECK_ERROR_MENTIONS(nn::config_from_json(wrong_type.dump(), "test"), "'nhead' must be an integer");
    wrong_type = json;
    wrong_type["norm_first"] = 1;
    CHECK_ERROR_MENTIONS(nn::config_from_json(wrong_type.dump(), "test"), "'norm_first' must be true or false");
    CHECK_ERROR_MENTIONS(nn::config_from_json("{\"kind\": ", "test"), "not valid JSON");
}

TEST_CASE("checkpoint: a saved model loads back to the same embeddings, in either dtype") {
    TemporaryDirectory folder;
    for (const nn::ModelConfig& config : {small_sig_predictor(), small_text_encoder(), small_lexical_text_encoder(), small_term_text_encoder()}) {
        for (Dtype saved_dtype : kFloatDtypes) {
            CAPTURE(config.kind);
            CAPTURE(dtype_name(saved_dtype));
            Generator generator(11);
            std::unique_ptr<nn::EmbeddingModel> model = nn::make_model(config, generator, saved_dtype);
            randomise_parameters(*model, generator);
            Tensor input = model_input(config, 7, 5, generator);
            Tensor mask = awkward_mask(7, 5);
            Tensor expected = embed(*model, input, mask, saved_dtype);

            std::string path = folder.file(config.kind + ".safetensors");
            nn::save_model(path, *model, {{"trained_on", "nothing"}});
            SafetensorsFile file = nn::read_safetensors(path);
            CHECK(file.metadata.at("trained_on") == "nothing");
            CHECK(file.metadata.at("nce_checkpoint") == "model");
            CHECK(nn::config_to_json(nn::config_from_json(file.metadata.at("nce_config"), path)) ==
                  nn::config_to_json(config));
            for (auto& [name, parameter] : model->named_parameters()) {
                CAPTURE(name);
                REQUIRE(file.tensors.count(name));
                CHECK(max_abs_difference(file.tensors.at(name), parameter->value()) == 0);
            }

            // Same dtype: bit for bit. The other dtype: as close as float32 rounding allows.
            std::unique_ptr<nn::EmbeddingModel> same = nn::load_model(path, saved_dtype);
            CHECK(nn::config_to_json(same->config()) == nn::config_to_json(config));
            CHECK(max_abs_difference(embed(*same, input, mask, saved_dtype), expected) == 0);
            Dtype other_dtype = saved_dtype == Dtype::Float32 ? Dtype::Float64 : Dtype::Float32;
            std::unique_ptr<nn::EmbeddingModel> other = nn::load_model(path, other_dtype);
            Tensor other_embeddings = embed(*other, input, mask, other_dtype);
            CHECK(other_embeddings.dtype() == other_dtype);
            CHECK(max_abs_difference(other_embeddings.to(Dtype::Float64), expected.to(Dtype::Float64)) < 1e-5);
        }
    }
}

TEST_CASE("checkpoint: the learnable temperature is saved and restored") {
    TemporaryDirectory folder;
    nn::ModelConfig config = small_text_encoder();
    config.learnable_temperature = true;
    Generator generator(3);
    std::unique_ptr<nn::EmbeddingModel> model = nn::make_model(config, generator, Dtype::Float64);
    REQUIRE(model->log_tau() != nullptr);
    model->log_tau()->set_value(Tensor::full(model->log_tau()->shape(), -1.75, Dtype::Float64));
    std::string path = folder.file("tau.safetensors");
    nn::save_model(path, *model);
    std::unique_ptr<nn::EmbeddingModel> loaded = nn::load_model(path, Dtype::Float64);
    REQUIRE(loaded->log_tau() != nullptr);
    CHECK(loaded->config().learnable_temperature);
    CHECK(loaded->log_tau()->value().to_vector() == model->log_tau()->value().to_vector());
}

TEST_CASE("checkpoint: the prompts are saved and restored, optional when absent, refused when too long") {
    TemporaryDirectory folder;
    nn::ModelConfig config = small_text_encoder();
    config.query_prompt = "query: ";
    config.passage_prompt = "passage: \u00e9\"quoted\"";  // any text, JSON escapes included
    Generator generator(5);
    std::unique_ptr<nn::EmbeddingModel> model = nn::make_model(config, generator);
    std::string path = folder.file("prompts.safetensors");
    nn::save_model(path, *model);
    std::unique_ptr<nn::EmbeddingModel> loaded = nn::load_model(path);
    CHECK(loaded->config().query_prompt == "query: ");
    CHECK(loaded->config().passage_prompt == config.passage_prompt);
    CHECK(nn::config_to_json(loaded->config()) == nn::config_to_json(config));

    // A config written before the prompts existed loads with none.
    nlohmann::json json = nlohmann::json::parse(nn::config_to_json(config));
    nlohmann::json without_prompts = json;
    without_prompts.erase("query_prompt");
    without_prompts.erase("passage_prompt");
    nn::ModelConfig old = nn::config_from_json(without_prompts.dump(), "old.safetensors");
    CHECK(old.query_prompt.empty());
    CHECK(old.passage_prompt.empty());

    // A prompt of the limit's size loads; one byte more is an error naming the key.
    nlohmann::json longest = json;
    longest["passage_prompt"] = std::string(nn::ModelConfig::kMaxPromptBytes, 'p');
    CHECK(nn::config_from_json(longest.dump(), "test").passage_prompt.size() == nn::ModelConfig::kMaxPromptBytes);
    nlohmann::json too_long = json;
    too_long["query_prompt"] = std::string(nn::ModelConfig::kMaxPromptBytes + 1, 'q');
    CHECK_ERROR_MENTIONS(nn::config_from_json(too_long.dump(), "big.safetensors"),
                         "big.safetensors: nce_config key 'query_prompt' has 1025 bytes; a prompt may have at most 1024");
    nlohmann::json not_text = json;
    not_text["passage_prompt"] = 7;
    CHECK_ERROR_MENTIONS(nn::config_from_json(not_text.dump(), "test"), "'passage_prompt' must be a string");
    nn::ModelConfig built = config;
    built.passage_prompt = std::string(nn::ModelConfig::kMaxPromptBytes + 1, 'p');
    CHECK_ERROR_MENTIONS(nn::make_model(built, generator), "passage_prompt has 1025 bytes");
}

TEST_CASE("checkpoint: a missing, extra or wrong-shaped tensor is an error naming it and both shapes") {
    TemporaryDirectory folder;
    Generator generator(5);
    std::unique_ptr<nn::EmbeddingModel> model = nn::make_model(small_sig_predictor(), generator);
    std::string path = folder.file("model.safetensors");
    nn::save_model(path, *model);
    SafetensorsFile good = nn::read_safetensors(path);
    std::string some_name = good.tensors.begin()->first;
    Shape some_shape = good.tensors.begin()->second.shape();
    std::string bad = folder.file("bad.safetensors");

    std::map<std::string, Tensor> missing = good.tensors;
    missing.erase(some_name);
    nn::write_safetensors(bad, missing, good.metadata);
    CHECK_ERROR_MENTIONS(nn::load_model(bad), fmt::format("'{}' {} is missing", some_name, shape_string(some_shape)));
    CHECK_ERROR_MENTIONS(nn::load_model(bad), "bad.safetensors");

    std::map<std::string, Tensor> extra = good.tensors;
    extra["encoder.surplus.weight"] = Tensor::zeros({2, 2}, Dtype::Float32);
    nn::write_safetensors(bad, extra, good.metadata);
    CHECK_ERROR_MENTIONS(nn::load_model(bad), "'encoder.surplus.weight' [2, 2] is not a parameter of the sig_predictor");

    std::map<std::string, Tensor> wrong_shape = good.tensors;
    wrong_shape[some_name] = Tensor::zeros({shape_numel(some_shape) + 1}, Dtype::Float32);
    nn::write_safetensors(bad, wrong_shape, good.metadata);
    CHECK_ERROR_MENTIONS(nn::load_model(bad), fmt::format("'{}' is [{}] in the file but {} in the sig_predictor model",
                                                          some_name, shape_numel(some_shape) + 1,
                                                          shape_string(some_shape)));

    std::map<std::string, Tensor> integer = good.tensors;
    integer[some_name] = Tensor::zeros(some_shape, Dtype::Int64);
    nn::write_safetensors(bad, integer, good.metadata);
    CHECK_ERROR_MENTIONS(nn::load_model(bad), "stored as int64");

    nn::write_safetensors(bad, good.tensors, {});
    CHECK_ERROR_MENTIONS(nn::load_model(bad), "has no 'nce_config' in its metadata");

    std::map<std::string, std::string> bad_config = good.metadata;
    nlohmann::json config = nlohmann::json::parse(bad_config.at("nce_config"));
    config["kind"] = "image_encoder";
    bad_config["nce_config"] = config.dump();
    nn::write_safetensors(bad, good.tensors, bad_config);
    CHECK_ERROR_MENTIONS(nn::load_model(bad), "bad.safetensors");

    CHECK_ERROR_MENTIONS(nn::load_model(path, Dtype::Int64), "compute dtype");
    CHECK_ERROR_MENTIONS(nn::save_model(bad, *model, {{"nce_step", "1"}}), "reserved");
}

TEST_CASE("checkpoint: a training checkpoint keeps the model, the optimizer state and the run's counters") {
    TemporaryDirectory folder;
    nn::ModelConfig config = small_text_encoder();
    Generator generator(21);
    std::unique_ptr<nn::EmbeddingModel> model = nn::make_model(config, generator);
    randomise_parameters(*model, generator);
    Tensor input = model_input(config, 4, 6, generator);
    Tensor mask = awkward_mask(4, 6);
    Tensor expected = embed(*model, input, mask, Dtype::Float32);

    nn::TrainingState state;
    state.step = 1234;
    state.epoch = 3;
    state.generator_seed = 18'000'000'000'000'000'000ULL;  // above the int64 range
    state.generator_offset = 987654321;
    state.best_metric = 0.1 + 0.2;  // must come back bit for bit
    for (auto& [name, parameter] : model->named_parameters()) {
        state.optimizer_state["exp_avg." + name] = generator.normal(parameter->shape(), Dtype::Float32);
        state.optimizer_state["exp_avg_sq." + name] = generator.uniform(parameter->shape(), Dtype::Float64);
    }
    state.optimizer_state["step"] = Tensor::from_indices({1234}, {});
    state.metadata = {{"learning_rate", "0.0003"}, {"data", "korquad"}};
    std::string path = folder.file("training.safetensors");
    nn::save_training_checkpoint(path, *model, state);
    CHECK(folder.entries() == std::vector<std::string>{"training.safetensors"});

    nn::TrainingCheckpoint loaded = nn::load_training_checkpoint(path);
    CHECK(loaded.state.step == 1234);
    CHECK(loaded.state.epoch == 3);
    CHECK(loaded.state.generator_seed == state.generator_seed);
    CHECK(loaded.state.generator_offset == state.generator_offset);
    REQUIRE(loaded.state.best_metric.has_value());
    CHECK(*loaded.state.best_metric == 0.1 + 0.2);
    CHECK(loaded.state.metadata == state.metadata);
    REQUIRE(loaded.state.optimizer_state.size() == state.optimizer_state.size());
    for (const auto& [name, tensor] : state.optimizer_state) {
        CAPTURE(name);
        const Tensor& back = loaded.state.optimizer_state.at(name);
        CHECK(back.dtype() == tensor.dtype());
        CHECK(back.shape() == tensor.shape());
        CHECK(std::memcmp(back.raw_data(), tensor.raw_data(), tensor.nbytes()) == 0);
    }
    CHECK(max_abs_difference(embed(*loaded.model, input, mask, Dtype::Float32), expected) == 0);

    // The model alone loads from it too (the optimizer's tensors are left aside)...
    std::unique_ptr<nn::EmbeddingModel> model_only = nn::load_model(path);
    CHECK(max_abs_difference(embed(*model_only, input, mask, Dtype::Float32), expected) == 0);

    // ...and resuming into an existing model of the same config restores its parameters.
    Generator other_generator(99);
    std::unique_ptr<nn::EmbeddingModel> fresh = nn::make_model(config, other_generator);
    CHECK(max_abs_difference(embed(*fresh, input, mask, Dtype::Float32), expected) > 0);
    nn::TrainingState restored = nn::restore_training_checkpoint(path, *fresh);
    CHECK(restored.step == 1234);
    CHECK(max_abs_difference(embed(*fresh, input, mask, Dtype::Float32), expected) == 0);

    // A model of another shape, or a file that is only a model, is refused with a reason.
    nn::ModelConfig wider = config;
    wider.d_model = 12;
    std::unique_ptr<nn::EmbeddingModel> wide = nn::make_model(wider, other_generator);
    CHECK_ERROR_MENTIONS(nn::restore_training_checkpoint(path, *wide), "d_model = 8, this model has 12");
    std::string model_path = folder.file("model.safetensors");
    nn::save_model(model_path, *model);
    CHECK_ERROR_MENTIONS(nn::load_training_checkpoint(model_path), "is a model checkpoint, not a training checkpoint");
    nn::TrainingState reserved = state;
    reserved.metadata["nce_step"] = "5";
    CHECK_ERROR_MENTIONS(nn::save_training_checkpoint(path, *model, reserved), "'nce_step' is reserved");
}

// ---- hostile checkpoints: limits, nesting, sizes ----

// `depth` arrays nested inside each other: "[[[...]]]".
std::string nested_arrays(size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

TEST_CASE("json nesting: the scanner counts brackets outside strings and finds the first one past the limit") {
    CHECK(find_excess_json_nesting(nested_arrays(64)) == std::string_view::npos);
    CHECK(find_excess_json_nesting(nested_arrays(65)) == 64);  // the 65th '[' opens level 65
    CHECK(find_excess_json_nesting("{\"a\":" + nested_arrays(64) + "}") == 68);  // '{' is level 1
    // Brackets in strings, escaped quotes and escaped backslashes do not count or confuse it.
    std::string in_strings = "[\"" + nested_arrays(100) + "\", \"\\\"[[[[\", \"\\\\\"]";
    CHECK(find_excess_json_nesting(in_strings, 1) == std::string_view::npos);
    CHECK(find_excess_json_nesting("[\"\\\\\", [", 1) == 7);  // after "\\" the string has ended
    // Closers without openers are the parser's to report; they open no level.
    CHECK(find_excess_json_nesting("]]]]" + nested_arrays(2), 2) == std::string_view::npos);
    CHECK_ERROR_MENTIONS(check_json_nesting(nested_arrays(100'000), "some.json"),
                         "some.json: JSON nesting exceeds 64 levels at byte 64");
}

TEST_CASE("safetensors: a header or nce_config nested 100,000 deep is an error naming the file, not a crash") {
    TemporaryDirectory folder;
    std::string path = folder.file("deep.safetensors");
    auto padded = [](std::string header) { return header + std::string((8 - header.size() % 8) % 8, ' '); };
    // The whole header, and a tensor's shape (whose dump() in a message recursed level by level).
    for (const std::string& header :
         {nested_arrays(100'000),
          R"({"w":{"dtype":"F32","shape":)" + nested_arrays(100'000) + R"(,"data_offsets":[0,0]}})"}) {
        write_bytes(path, safetensors_bytes(padded(header), ""));
        CHECK_ERROR_MENTIONS(nn::read_safetensors(path), "deep.safetensors': the header: JSON nesting exceeds 64 levels");
    }
    // nce_config is a JSON string inside the header: the header is shallow, the config is not.
    nn::write_safetensors(path, {}, {{"nce_config", nested_arrays(100'000)}});
    CHECK_ERROR_MENTIONS(nn::load_model(path), "deep.safetensors': nce_config: JSON nesting exceeds 64 levels");
    nn::write_safetensors(path, {}, {{"nce_config", "{\"kind\": " + nested_arrays(100'000) + "}"}});
    CHECK_ERROR_MENTIONS(nn::load_model(path), "deep.safetensors': nce_config: JSON nesting exceeds 64 levels");
    // Nesting up to the limit still parses (and is then refused for what it says).
    write_bytes(path, safetensors_bytes(padded(R"({"__metadata__":)" + nested_arrays(63) + "}"), ""));
    CHECK_ERROR_MENTIONS(nn::read_safetensors(path), "__metadata__ must be an object of strings");
}

TEST_CASE("safetensors: an empty tensor whose other sizes overflow int64 is refused") {
    TemporaryDirectory folder;
    std::string path = folder.file("empty_but_huge.safetensors");
    write_bytes(path, safetensors_bytes(
                          R"({"w":{"dtype":"F32","shape":[0,4611686018427387904,4611686018427387904],"data_offsets":[0,0]}})",
                          ""));
    CHECK_ERROR_MENTIONS(nn::read_safetensors(path), "tensor 'w': shape [0,4611686018427387904,4611686018427387904] is too large");
}

// A checkpoint of no tensors whose nce_config is `config` with `changes` applied.
std::string checkpoint_claiming(const TemporaryDirectory& folder, const nn::ModelConfig& config,
                                const nlohmann::json& changes) {
    nlohmann::json json = nlohmann::json::parse(nn::config_to_json(config));
    json.update(changes);
    std::string path = folder.file("claims.safetensors");
    nn::write_safetensors(path, {}, {{"nce_config", json.dump()}});
    return path;
}

TEST_CASE("checkpoint: a config past the limits is refused naming the field, its value and the range") {
    TemporaryDirectory folder;
    constexpr int64_t huge = int64_t{1} << 62;
    struct Case {
        nn::ModelConfig base;
        nlohmann::json changes;
        std::string expected;
    };
    const std::vector<Case> cases = {
        {small_text_encoder(), {{"vocab_size", int64_t{1} << 30}}, "vocab_size = 1073741824 is outside the allowed range [1, 16777216]"},
        {small_text_encoder(), {{"max_len", huge}}, "max_len = 4611686018427387904 is outside the allowed range [1, 1048576]"},
        {small_text_encoder(), {{"d_model", huge}, {"nhead", 1}}, "d_model = 4611686018427387904 is outside the allowed range [1, 1048576]"},
        {small_text_encoder(), {{"dim_feedforward", huge - 2}}, "dim_feedforward = 4611686018427387902 is outside"},
        {small_text_encoder(), {{"out_dim", huge}}, "out_dim = 4611686018427387904 is outside the allowed range [0, 1048576]"},
        {small_text_encoder(), {{"num_layers", 1'000'000'000}}, "num_layers = 1000000000 is outside the allowed range [1, 1024]"},
        {small_text_encoder(), {{"in_dim", -5}}, "in_dim = -5 is outside the allowed range [0, 1048576]"},
        {small_sig_predictor(), {{"in_dim", huge}}, "in_dim = 4611686018427387904 is outside the allowed range [1, 1048576]"},
    };
    CachingAllocator& allocator = CachingAllocator::host();
    for (const Case& bad : cases) {
        CAPTURE(bad.changes.dump());
        std::string path = checkpoint_claiming(folder, bad.base, bad.changes);
        allocator.reset_peak();
        std::size_t before = allocator.stats().bytes_in_use;
        CHECK_ERROR_MENTIONS(nn::load_model(path), "claims.safetensors': nce_config does not describe a valid model");
        CHECK_ERROR_MENTIONS(nn::load_model(path), bad.expected);
        CHECK(allocator.stats().peak_bytes_in_use - before < (1 << 20));  // nothing the config asked for
    }
    // JSON has no infinity (nlohmann refuses 1e999), but a config built in code can.
    nn::ModelConfig infinite = small_sig_predictor();
    infinite.layer_norm_eps = std::numeric_limits<double>::infinity();
    CHECK_ERROR_MENTIONS(nn::validate_config(infinite), "layer_norm_eps must be positive and finite, got inf");
    // The largest sizes allowed are accepted by the checks (the count check then stops them).
    nn::ModelConfig widest = small_text_encoder();
    widest.vocab_size = nn::kMaxVocabSize;
    widest.max_len = widest.d_model = widest.dim_feedforward = widest.out_dim = nn::kMaxModelWidth;
    widest.num_layers = nn::kMaxNumLayers;
    CHECK_NOTHROW(nn::validate_config(widest));
    CHECK(nn::parameter_count(widest) > (int64_t{1} << 50));  // no overflow at the limits
}

TEST_CASE("checkpoint: a config needing more parameters than the file holds is refused before allocating") {
    TemporaryDirectory folder;
    CachingAllocator& allocator = CachingAllocator::host();
    // Within the limits, but 2^20 · 64 values for the embedding alone (256 MB as float32)
    // from a file of a few hundred bytes; and 2^44 values, which no machine could allocate.
    for (nlohmann::json changes : {nlohmann::json{{"vocab_size", int64_t{1} << 20}, {"d_model", 64}},
                                   nlohmann::json{{"vocab_size", int64_t{1} << 24}, {"d_model", int64_t{1} << 20}}}) {
        CAPTURE(changes.dump());
        std::string path = checkpoint_claiming(folder, small_text_encoder(), changes);
        nn::ModelConfig claimed = nn::config_from_json(nn::read_safetensors(path).metadata.at("nce_config"), "test");
        allocator.reset_peak();
        std::size_t before = allocator.stats().bytes_in_use;
        CHECK_ERROR_MENTIONS(nn::load_model(path),
                             fmt::format("claims.safetensors': nce_config describes a text_encoder of {} parameters but "
                                         "the file's tensors hold 0 values (0 bytes)",
                                         nn::parameter_count(claimed)));
        CHECK(allocator.stats().peak_bytes_in_use - before < (1 << 20));
    }
}

TEST_CASE("checkpoint: parameter_shapes lists exactly the parameters make_model builds") {
    for (nn::ModelConfig config : {small_sig_predictor(), small_text_encoder(), small_lexical_text_encoder(), small_term_text_encoder()}) {
        for (bool temperature : {false, true}) {
            for (int64_t out_dim : {int64_t{0}, int64_t{3}}) {
                config.learnable_temperature = temperature;
                config.out_dim = config.kind == "sig_predictor" ? out_dim + 2 : out_dim;
                CAPTURE(nn::config_to_json(config));
                Generator generator(1);
                std::unique_ptr<nn::EmbeddingModel> model = nn::make_model(config, generator);
                std::map<std::string, Shape> built;
                int64_t values = 0;
                for (auto& [name, parameter] : model->named_parameters()) {
                    built[name] = parameter->shape();
                    values += parameter->value().numel();
                }
                CHECK(nn::parameter_shapes(config) == built);
                CHECK(nn::parameter_count(config) == values);
            }
        }
    }
}

TEST_CASE("checkpoint: a PyTorch checkpoint holding log_tau loads it, whether or not nce_config names the temperature") {
    // PyTorch writes the state_dict with log_tau and an nce_config of only the keys the
    // contract requires; the tensor's presence means a learnable temperature.
    TemporaryDirectory folder;
    for (nn::ModelConfig config : {small_sig_predictor(), small_text_encoder()}) {
        CAPTURE(config.kind);
        config.learnable_temperature = true;
        Generator generator(8);
        std::unique_ptr<nn::EmbeddingModel> model = nn::make_model(config, generator, Dtype::Float64);
        model->log_tau()->set_value(Tensor::full({1}, -2.5, Dtype::Float64));
        std::string saved = folder.file("saved.safetensors");
        nn::save_model(saved, *model);
        SafetensorsFile file = nn::read_safetensors(saved);
        nlohmann::json contract_keys = nlohmann::json::parse(file.metadata.at("nce_config"));
        for (const char* key : {"learnable_temperature", "min_temperature", "max_temperature"}) contract_keys.erase(key);
        nlohmann::json says_false = contract_keys;
        says_false["learnable_temperature"] = false;
        for (const nlohmann::json& written : {contract_keys, says_false}) {
            CAPTURE(written.dump());
            std::string path = folder.file("torch.safetensors");
            nn::write_safetensors(path, file.tensors, {{"nce_config", written.dump()}});
            std::unique_ptr<nn::EmbeddingModel> loaded = nn::load_model(path, Dtype::Float64);
            CHECK(loaded->config().learnable_temperature);
            REQUIRE(loaded->log_tau() != nullptr);
            CHECK(loaded->log_tau()->value().to_vector() == std::vector<double>{-2.5});
            CHECK(nn::temperature(*loaded) == doctest::Approx(std::exp(-2.5)));
        }
    }
}

// ---- PyTorch parity ----

// tests/fixtures/torch_reference/, found from NCE_SOURCE_ROOT (tests/meson.build sets it)
// or from the working folder.
fs::path torch_reference_folder() {
    std::vector<fs::path> roots;
    if (const char* root = std::getenv("NCE_SOURCE_ROOT")) roots.emplace_back(root);
    roots.emplace_back(".");
    roots.emplace_back("..");
    for (const fs::path& root : roots)
        if (fs::is_directory(root / "tests" / "fixtures" / "torch_reference"))
            return root / "tests" / "fixtures" / "torch_reference";
    return {};
}

TEST_CASE("checkpoint: PyTorch's sig_predictor and text_encoder load and give PyTorch's embeddings") {
    // Made by tests/fixtures/make_torch_reference.py: PyTorch modules with nce's names, the
    // state_dict saved as F32, embeddings computed in float64 in eval mode; the masks have
    // left padding, gaps and right padding, and padded features hold 100.0.
    fs::path folder = torch_reference_folder();
    REQUIRE_MESSAGE(!folder.empty(), "tests/fixtures/torch_reference/ not found; set NCE_SOURCE_ROOT to the project root");
    for (auto [model_name, input_name] : {std::pair{"sig_predictor", "features"}, {"text_encoder", "ids"}}) {
        std::string prefix = (folder / model_name).string();
        Tensor input = read_npy(prefix + "_" + input_name + ".npy");
        Tensor mask = read_npy(prefix + "_mask.npy");
        Tensor expected = read_npy(prefix + "_expected.npy");
        for (Dtype dtype : kFloatDtypes) {
            CAPTURE(model_name);
            CAPTURE(dtype_name(dtype));
            std::unique_ptr<nn::EmbeddingModel> model = nn::load_model(prefix + ".safetensors", dtype);
            CHECK(model->config().kind == model_name);
            Tensor embeddings = embed(*model, input, mask, dtype);
            REQUIRE(embeddings.shape() == expected.shape());
            CHECK(embeddings.dtype() == dtype);
            // The weights are float32 either way; float64 compute matches PyTorch's float64
            // to rounding, float32 compute to float32 rounding.
            double tolerance = dtype == Dtype::Float64 ? 1e-10 : 1e-5;
            CHECK(max_abs_difference(embeddings.to(Dtype::Float64), expected) < tolerance);
        }
    }
}

}  // namespace
}  // namespace nce::testing
