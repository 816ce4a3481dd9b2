// The tokenizer model check (data/tokenizer_model_check.h): a trained model passes and loads;
// models built by hand from a trained model's bytes (a piece's string emptied, a piece that
// starts with a NUL byte, truncated bytes, bad varints, wrong wire types, normalization rules
// that point outside themselves, too many pieces, a file over the size limit) are one nce::Error
// line naming the file, before SentencePiece sees them (some of them make SentencePiece
// terminate the process or crash).
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "data/tokenizer.h"
#include "data/tokenizer_model_check.h"
#include "tests/test_helpers.h"

namespace {

namespace fs = std::filesystem;
using namespace nce;
using nce::testing::TemporaryDirectory;
using namespace nce::data;

// Protobuf's wire format, just enough to build fields by hand.
std::string varint(uint64_t value) {
    std::string bytes;
    while (value >= 0x80) {
        bytes += static_cast<char>(0x80 | (value & 0x7F));
        value >>= 7;
    }
    bytes += static_cast<char>(value);
    return bytes;
}
std::string length_delimited(uint32_t field, const std::string& value) {
    return varint(field << 3 | 2) + varint(value.size()) + value;
}
// A ModelProto field 1: one SentencePiece message with its string and a score of -1.
std::string piece_field(const std::string& piece) {
    return length_delimited(1, length_delimited(1, piece) + std::string("\x15\x00\x00\x80\xbf", 5));
}

// A small unigram model trained on made-up English sentences, as bytes.
std::string trained_model_bytes(const fs::path& directory) {
    const std::vector<std::string> words = {"the", "cat", "sat", "on", "mat", "dog", "ran", "far", "big", "red",
                                            "sun", "sky", "blue", "tree", "grew", "tall", "fast", "slow"};
    std::vector<std::string> texts;
    for (size_t s = 0; s < 400; ++s) {
        std::string sentence;
        for (size_t w = 0; w < 6; ++w) sentence += (w ? " " : "") + words[(s * 7 + w * w * 3 + s / 5) % words.size()];
        texts.push_back(sentence);
    }
    TokenizerOptions options;
    options.vocab_size = 30;
    options.character_coverage = 1.0;
    Tokenizer::train(texts, options, directory.string());
    std::ifstream in(directory / "tokenizer.model", std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Tokenizer::load of `bytes` written to a file; the error it throws ("" when it loads).
std::string load_error(const fs::path& file, const std::string& bytes) {
    { std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes; }
    try {
        Tokenizer::load(file.string());
    } catch (const Error& error) {
        return error.what();
    }
    return "";
}

// The refusal is one line that names the file, says what is wrong and how to fix it.
void check_refusal(const std::string& message, const fs::path& file, const std::string& problem) {
    INFO("message was: " << message);
    CHECK(message.find('\n') == std::string::npos);
    CHECK(message.find(fmt::format("'{}'", file.string())) != std::string::npos);
    CHECK(message.find("not a SentencePiece model") != std::string::npos);
    CHECK(message.find(problem) != std::string::npos);
    CHECK(message.find("pass a tokenizer.model written by training") != std::string::npos);
}

}  // namespace

TEST_CASE("tokenizer model check: a trained model passes and loads; hand-broken ones are one-line errors") {
    TemporaryDirectory directory;
    const std::string trained = trained_model_bytes(directory.path);
    const fs::path file = directory.path / "broken.model";

    // The trained model passes the check and loads, from its file or its directory.
    CHECK_NOTHROW(check_tokenizer_model(trained, "tokenizer.model"));
    CHECK(load_error(file, trained) == "");
    CHECK(Tokenizer::load(directory.path.string()).vocab_size() == 30);

    // The <unk> piece's string emptied: "<unk>" (5 bytes) gone from the piece and its message.
    const std::string unk_piece("\x0a\x0e\x0a\x05<unk>", 9);
    const size_t unk_at = trained.find(unk_piece);
    REQUIRE(unk_at != std::string::npos);
    std::string emptied = trained;
    emptied.replace(unk_at, unk_piece.size(), std::string("\x0a\x09\x0a\x00", 4));
    check_refusal(load_error(file, emptied), file, "piece 1: its string is empty");

    // The fuzz finding's class: a piece starting with a NUL byte is a zero-length key for
    // SentencePiece's trie, which terminates the process. One in the middle is refused too.
    check_refusal(load_error(file, trained + piece_field(std::string("\0ab", 3))), file, "holds a NUL byte");
    check_refusal(load_error(file, trained + piece_field(std::string("ab\0c", 4))), file, "holds a NUL byte");
    check_refusal(load_error(file, trained + piece_field("")), file, "piece 30: its string is empty");
    check_refusal(load_error(file, trained + length_delimited(1, std::string("\x15\x00\x00\x00\x00", 5))), file,
                  "piece 30: it has no string");

    // Truncated files: cut inside the normalizer spec (the last field) and inside a piece.
    check_refusal(load_error(file, trained.substr(0, trained.size() - 1)), file, "(a truncated file?)");
    check_refusal(load_error(file, trained.substr(0, unk_at + 5)), file, "the model: field 1 says 14 bytes");

    // Bad varints: 11 bytes long, 10 bytes holding more than 64 bits, cut off at the end.
    check_refusal(load_error(file, trained + "\x0a" + std::string(10, '\xff') + "\x01"), file,
                  "a length is a varint longer than 64 bits");
    check_refusal(load_error(file, trained + "\x10" + std::string(9, '\xff') + "\x02"), file,
                  "a varint value is a varint longer than 64 bits");
    check_refusal(load_error(file, trained + "\x10\xff"), file, "a varint value runs past the end");

    // Wrong or unknown wire types, and field number 0.
    check_refusal(load_error(file, trained + "\x08\x01"), file, "field 1 (a piece) is a varint");
    check_refusal(load_error(file, trained + "\x0b"), file, "wire type 3, a group or unknown");
    check_refusal(load_error(file, trained + "\x0f"), file, "wire type 7, a group or unknown");
    check_refusal(load_error(file, trained + std::string("\x02\x00", 2)), file, "field number out of range");
    check_refusal(load_error(file, trained + length_delimited(1, length_delimited(1, "x") + "\x10\x01")), file,
                  "field 2 (its score) is a varint, not 4 bytes");

    // Fields the check does not know are skipped by wire type (protobuf keeps them as unknown).
    CHECK(load_error(file, trained + "\xa0\x06\x07" + std::string("\xa9\x06", 2) + std::string(8, '\0')) == "");

    // Normalization rules (nmt_nfkc, a Darts trie of 177,152 bytes after its 4-byte size) whose
    // root points 4 GB outside the trie: SentencePiece reads there and crashes. A trie size
    // past the rules' end is refused too.
    const std::string trie_size("\x00\xb4\x02\x00", 4);
    const size_t rules_at = trained.find(trie_size, trained.find("nmt_nfkc"));
    REQUIRE(rules_at != std::string::npos);
    std::string far_root = trained;
    far_root.replace(rules_at + 4, 4, std::string("\x00\xfe\xff\xff", 4));
    check_refusal(load_error(file, far_root), file,
                  "the normalizer spec: its normalization rules (precompiled_charsmap) are broken: trie unit 0 "
                  "points outside the trie's 44288 units");
    std::string long_trie = trained;
    long_trie.replace(rules_at, 4, std::string("\x00\xff\xff\x00", 4));
    check_refusal(load_error(file, long_trie), file, "a trie of 16776960 bytes in");
    CHECK(load_error(file, trained + length_delimited(5, length_delimited(1, "identity"))) == "");
    check_refusal(load_error(file, trained + length_delimited(5, length_delimited(2, "\x08"))), file,
                  "the denormalizer spec: its normalization rules (precompiled_charsmap) are broken: they are "
                  "shorter");
    check_refusal(load_error(file, trained + "\x18\x01"), file, "field 3 (the normalizer spec) is a varint");

    // More pieces than any real vocabulary.
    std::string many;
    for (size_t i = 0; i <= kMaxTokenizerPieces; ++i) many += piece_field("x");
    CHECK_ERROR_MENTIONS(check_tokenizer_model(many, "many.model"), "more than 1000000 pieces");

    // A file over the size limit is refused before it is read (a sparse file: no disk used).
    const fs::path huge = directory.path / "huge.model";
    { std::ofstream(huge, std::ios::binary) << trained; }
    fs::resize_file(huge, (256u << 20) + 1);
    CHECK_ERROR_MENTIONS(Tokenizer::load(huge.string()), "-byte limit for a tokenizer model");
}
