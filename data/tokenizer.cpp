#include "data/tokenizer.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <unordered_map>

#include "data/identifier_words.h"
#include "engine/atomic_file.h"
#include "data/text_prefix.h"
#include "data/tokenizer_model_check.h"
#include "engine/threads.h"

namespace nce::data {
namespace {

namespace fs = std::filesystem;

const char* const kModelFileName = "tokenizer.model";
// The control piece that marks a model trained on identifier words (tokenizer.h). "-2": the
// rule that sets punctuation apart. Models of the first rule (punctuation left attached) carry
// "<identifier-words>"; their pieces were learned on text this version no longer writes, so
// they are refused at load rather than read the new way.
const char* const kIdentifierWordsPiece = "<identifier-words-2>";
const char* const kFirstIdentifierWordsPiece = "<identifier-words>";

// Far above a real model (a 32,000-piece vocabulary with its normalization rules is about 1 MB),
// so that a hostile file cannot make load allocate without bound.
constexpr uintmax_t kMaxModelFileBytes = 256u << 20;

// Hands the training lines to SentencePiece one at a time, from memory (no temporary file).
class LinesIterator : public sentencepiece::SentenceIterator {
public:
    explicit LinesIterator(const std::vector<std::string>& lines) : lines_(lines) {}
    bool done() const override { return position_ >= lines_.size(); }
    void Next() override { ++position_; }
    const std::string& value() const override { return lines_[position_]; }
    sentencepiece::util::Status status() const override { return {}; }

private:
    const std::vector<std::string>& lines_;
    size_t position_ = 0;
};

// SentencePiece learns from sentences: each text's non-blank lines become training lines.
std::vector<std::string> training_lines(const std::vector<std::string>& texts) {
    std::vector<std::string> lines;
    for (const std::string& text : texts) {
        size_t start = 0;
        while (start <= text.size()) {
            size_t end = text.find('\n', start);
            if (end == std::string::npos) end = text.size();
            std::string line = text.substr(start, end - start);
            if (line.find_first_not_of(" \t\r") != std::string::npos) lines.push_back(std::move(line));
            start = end + 1;
        }
    }
    return lines;
}

// SentencePiece's messages start with its source location and the failed check,
// "./src/trainer_interface.cc(660) [(a) == (b)] Vocabulary size too high (200). ...": keep the
// sentence after them, or say what failed when there is none.
std::string readable(const sentencepiece::util::Status& status, const char* otherwise) {
    std::string message = status.message();
    size_t check_end = message.find("] ");
    if (message.rfind("./", 0) == 0 && check_end != std::string::npos) message = message.substr(check_end + 2);
    if (message.find_first_not_of(" ]") == std::string::npos || message.rfind("./", 0) == 0) return otherwise;
    return message;
}

// The option a user changes for a SentencePiece training error, where one is clear.
std::string training_hint(const std::string& message) {
    if (message.find("ocabulary size") != std::string::npos || message.find("vocab_size") != std::string::npos)
        return "; lower vocab_size or train on more text";
    if (message.find("character_coverage") != std::string::npos) return "; character_coverage must be in [0.98, 1]";
    return "";
}

// The model file's bytes, read once: checked, then handed to SentencePiece.
std::string read_model_file(const fs::path& path) {
    std::error_code error;
    const uintmax_t size = fs::file_size(path, error);
    NCE_CHECK(!error, "tokenizer load: cannot read '{}': {}", path.string(), error.message());
    NCE_CHECK(size <= kMaxModelFileBytes,
              "tokenizer load: '{}' is {} bytes, over the {}-byte limit for a tokenizer model; pass a tokenizer.model "
              "written by training",
              path.string(), size, kMaxModelFileBytes);
    std::ifstream in(path, std::ios::binary);
    NCE_CHECK(in, "tokenizer load: cannot open '{}': {}", path.string(), std::strerror(errno));
    std::string bytes(static_cast<size_t>(size), '\0');
    in.read(bytes.data(), static_cast<std::streamsize>(size));
    NCE_CHECK(in.gcount() == static_cast<std::streamsize>(size), "tokenizer load: reading '{}' failed: {}",
              path.string(), in.bad() ? std::strerror(errno) : "the file shrank while it was read");
    return bytes;
}

void write_file_atomically(const fs::path& path, const std::string& bytes) {
    write_bytes_atomically(path.string(), "tokenizer train", bytes);
}

// A pretrained kind's row, as Hugging Face truncates a single text: the text's pieces cut to
// max_length minus the special tokens, then the special tokens around them.
std::vector<int64_t> pretrained_encoding(const PretrainedTokenizer& tokenizer, const std::string& text,
                                         int64_t max_length) {
    const int64_t specials = static_cast<int64_t>(tokenizer.ids_before().size() + tokenizer.ids_after().size());
    NCE_CHECK(max_length >= specials, "tokenizer encode: max_length {} is shorter than the {} special tokens every "
              "row holds; pass at least {}", max_length, specials, specials + 1);
    std::vector<int64_t> content = tokenizer.encode_content(text).ids;
    if (static_cast<int64_t>(content.size()) > max_length - specials) content.resize(max_length - specials);
    std::vector<int64_t> row = tokenizer.ids_before();
    row.insert(row.end(), content.begin(), content.end());
    row.insert(row.end(), tokenizer.ids_after().begin(), tokenizer.ids_after().end());
    return row;
}

}  // namespace

TokenizerModelType parse_tokenizer_model_type(const std::string& name) {
    if (name == "unigram") return TokenizerModelType::Unigram;
    if (name == "bpe") return TokenizerModelType::Bpe;
    fail("tokenizer: unknown model type '{}'; choose unigram or bpe", name);
}

const char* tokenizer_model_type_name(TokenizerModelType type) {
    return type == TokenizerModelType::Unigram ? "unigram" : "bpe";
}

Tokenizer::Tokenizer(std::shared_ptr<sentencepiece::SentencePieceProcessor> processor, std::string model_path)
    : processor_(std::move(processor)), model_path_(std::move(model_path)) {
    auto carries = [&](const char* piece) {
        const int marker = processor_->PieceToId(piece);
        return marker != processor_->unk_id() && processor_->IsControl(marker);
    };
    NCE_CHECK(!carries(kFirstIdentifierWordsPiece),
              "tokenizer load: '{}' reads names as words by the first rule (punctuation left attached), which this "
              "version no longer reads; train the model and its tokenizer again", model_path_);
    identifier_words_ = carries(kIdentifierWordsPiece);
}

Tokenizer Tokenizer::train(const std::vector<std::string>& texts, const TokenizerOptions& options,
                           const std::string& directory) {
    // Checked here so the message names our option; SentencePiece's would name its flag.
    NCE_CHECK(options.vocab_size >= 3, "tokenizer train: vocab_size must be at least 3 (<pad>, <unk> and a piece), got {}",
              options.vocab_size);
    NCE_CHECK(options.character_coverage >= 0.98 && options.character_coverage <= 1.0,
              "tokenizer train: character_coverage must be in [0.98, 1], got {}", options.character_coverage);
    std::vector<std::string> rewritten;
    if (options.identifier_words)
        for (const std::string& text : texts) rewritten.push_back(identifier_words(text).text);
    std::vector<std::string> lines = training_lines(options.identifier_words ? rewritten : texts);
    NCE_CHECK(!lines.empty(), "tokenizer train: no text to learn from ({} texts, all empty); pass the corpus's texts",
              texts.size());

    std::unordered_map<std::string, std::string> arguments = {
        {"model_type", tokenizer_model_type_name(options.model_type)},
        {"vocab_size", std::to_string(options.vocab_size)},
        {"character_coverage", fmt::format("{}", options.character_coverage)},
        {"pad_id", "0"},
        {"unk_id", "1"},
        {"bos_id", "-1"},
        {"eos_id", "-1"},
        {"num_threads", std::to_string(std::clamp(num_threads(), 1, 16))},
        {"minloglevel", "2"},  // errors only: SentencePiece reports them to us as a Status too
    };
    if (options.identifier_words) arguments["control_symbols"] = kIdentifierWordsPiece;
    if (!options.exact_vocab_size && options.model_type == TokenizerModelType::Unigram)
        arguments["hard_vocab_limit"] = "false";
    if (options.seed) sentencepiece::SetRandomGeneratorSeed(*options.seed);

    LinesIterator iterator(lines);
    std::string serialized_model;
    sentencepiece::util::Status status = sentencepiece::SentencePieceTrainer::Train(arguments, &iterator, &serialized_model);
    if (!status.ok()) {
        std::string message = readable(status, "training failed");
        fail("tokenizer train ({} vocab_size={}): sentencepiece: {}{}", tokenizer_model_type_name(options.model_type),
             options.vocab_size, message, training_hint(message));
    }

    std::error_code error;
    fs::create_directories(directory, error);
    NCE_CHECK(!error, "tokenizer train: cannot create directory '{}': {}", directory, error.message());
    fs::path model_path = fs::path(directory) / kModelFileName;
    write_file_atomically(model_path, serialized_model);

    auto processor = std::make_shared<sentencepiece::SentencePieceProcessor>();
    status = processor->LoadFromSerializedProto(serialized_model);
    NCE_CHECK(status.ok(), "tokenizer train: the trained model does not load: {}", readable(status, "unreadable model"));
    return Tokenizer(std::move(processor), model_path.string());
}

Tokenizer::Tokenizer(std::shared_ptr<const PretrainedTokenizer> pretrained, std::string model_path)
    : pretrained_(std::move(pretrained)), model_path_(std::move(model_path)) {}

Tokenizer Tokenizer::load(const std::string& path) {
    const fs::path pretrained_file = find_pretrained_tokenizer_file(path);
    if (!pretrained_file.empty()) return Tokenizer(load_pretrained_tokenizer(pretrained_file), pretrained_file.string());
    return load_sentencepiece(path);
}

Tokenizer Tokenizer::load_sentencepiece(const std::string& path) {
    fs::path model_path = path;
    if (fs::is_directory(model_path)) model_path /= kModelFileName;
    NCE_CHECK(fs::is_regular_file(model_path),
              "tokenizer load: no model file at '{}'; pass a tokenizer.model (or its directory) written by training, or a "
              "model folder with tokenizer.json, vocab.txt or sentencepiece.bpe.model",
              model_path.string());
    const std::string bytes = read_model_file(model_path);
    check_tokenizer_model(bytes, model_path.string());  // some malformed models make SentencePiece terminate
    auto processor = std::make_shared<sentencepiece::SentencePieceProcessor>();
    sentencepiece::util::Status status = processor->LoadFromSerializedProto(bytes);
    NCE_CHECK(status.ok(), "tokenizer load: '{}' is not a SentencePiece model ({}); pass a tokenizer.model written by training",
              model_path.string(), readable(status, "it does not parse"));
    return Tokenizer(std::move(processor), model_path.string());
}

std::vector<int64_t> Tokenizer::encode_ids(const std::string& text) const {
    if (pretrained_) {
        std::vector<int64_t> ids = pretrained_->ids_before();
        const std::vector<int64_t> content = pretrained_->encode_content(text).ids;
        ids.insert(ids.end(), content.begin(), content.end());
        ids.insert(ids.end(), pretrained_->ids_after().begin(), pretrained_->ids_after().end());
        return ids;
    }
    std::vector<int> pieces;
    sentencepiece::util::Status status =
        processor_->Encode(identifier_words_ ? identifier_words(text).text : text, &pieces);
    NCE_CHECK(status.ok(), "tokenizer encode: sentencepiece failed on a text of {} bytes: {}", text.size(),
              readable(status, "encoding failed"));
    return std::vector<int64_t>(pieces.begin(), pieces.end());
}

Tokenizer::SpecialTokens Tokenizer::special_tokens() const {
    if (!pretrained_) return {};
    return {static_cast<int64_t>(pretrained_->ids_before().size()), static_cast<int64_t>(pretrained_->ids_after().size())};
}

Tokenizer::PiecesWithOffsets Tokenizer::encode_with_offsets(const std::string& text) const {
    if (pretrained_) {
        PiecesWithOffsets result;
        auto add_special = [&](const std::vector<int64_t>& ids) {
            for (int64_t id : ids) result.ids.push_back(id), result.begin.push_back(0), result.end.push_back(0);
        };
        add_special(pretrained_->ids_before());
        const ContentPieces content = pretrained_->encode_content(text);
        result.ids.insert(result.ids.end(), content.ids.begin(), content.ids.end());
        result.begin.insert(result.begin.end(), content.begin.begin(), content.begin.end());
        result.end.insert(result.end.end(), content.end.begin(), content.end.end());
        add_special(pretrained_->ids_after());
        return result;
    }
    // SentencePiece's offsets are into the text it read. With identifier words that is the
    // rewritten text, mapped back through each byte's source: a piece covers the original
    // bytes from the source of its first byte to that of its last, leaving out the spaces the
    // rewriting added (a piece of added spaces alone covers none, at the byte after them).
    // Without, every byte is its own source.
    IdentifierWords words;
    if (identifier_words_) words = identifier_words(text);
    sentencepiece::ImmutableSentencePieceText encoded =
        processor_->EncodeAsImmutableProto(identifier_words_ ? words.text : text);
    PiecesWithOffsets result;
    for (const auto& piece : encoded.pieces()) {
        result.ids.push_back(piece.id());
        size_t first = piece.begin(), last = piece.end();  // [first, last) of the text read
        if (!identifier_words_) {
            result.begin.push_back(static_cast<int64_t>(first));
            result.end.push_back(static_cast<int64_t>(last));
            continue;
        }
        if (first >= words.text.size()) {  // an empty piece at the end
            result.begin.push_back(static_cast<int64_t>(text.size()));
            result.end.push_back(static_cast<int64_t>(text.size()));
            continue;
        }
        const int64_t after_spaces = words.source[first];
        while (first < last && words.added[first]) ++first;
        while (last > first && words.added[last - 1]) --last;
        result.begin.push_back(first < last ? words.source[first] : after_spaces);
        result.end.push_back(first < last ? words.source[last - 1] + 1 : after_spaces);
    }
    return result;
}

EncodedBatch Tokenizer::encode(const std::vector<std::string>& texts, int64_t max_length) const {
    NCE_CHECK(max_length >= 1, "tokenizer encode: max_length must be at least 1, got {}", max_length);
    NCE_CHECK(!texts.empty(), "tokenizer encode: no texts; pass at least one");
    const int64_t batch = static_cast<int64_t>(texts.size());

    std::vector<std::vector<int64_t>> rows(texts.size());
    int64_t longest = 0;
    for (int64_t b = 0; b < batch; ++b) {
        // Only the prefix that can hold the kept tokens is read (data/text_prefix.h).
        const std::string text(prefix_for_tokens(texts[b], max_length));
        if (pretrained_) {
            rows[b] = pretrained_encoding(*pretrained_, text, max_length);
            longest = std::max(longest, static_cast<int64_t>(rows[b].size()));
            continue;
        }
        rows[b] = encode_ids(text);
        NCE_CHECK(!rows[b].empty(),
                  "tokenizer encode: text {} of {} gives no tokens (it is empty or only spaces); drop empty texts "
                  "before encoding",
                  b, batch);
        if (static_cast<int64_t>(rows[b].size()) > max_length) rows[b].resize(max_length);  // truncation
        longest = std::max(longest, static_cast<int64_t>(rows[b].size()));
    }

    EncodedBatch encoded{Tensor::full({batch, longest}, static_cast<double>(pad_id()), Dtype::Int64),
                         Tensor::zeros({batch, longest}, Dtype::Int64)};
    int64_t* ids = encoded.ids.data<int64_t>();    // [B, T]
    int64_t* mask = encoded.mask.data<int64_t>();  // [B, T]
    for (int64_t b = 0; b < batch; ++b) {
        for (size_t t = 0; t < rows[b].size(); ++t) {
            ids[b * longest + static_cast<int64_t>(t)] = rows[b][t];
            mask[b * longest + static_cast<int64_t>(t)] = 1;
        }
    }
    return encoded;
}

std::string Tokenizer::decode(const std::vector<int64_t>& ids) const {
    if (pretrained_) return pretrained_->decode(ids);
    std::vector<int> pieces;
    for (int64_t id : ids) {
        NCE_CHECK(id >= 0 && id < vocab_size(), "tokenizer decode: id {} is outside the vocabulary [0, {})", id,
                  vocab_size());
        pieces.push_back(static_cast<int>(id));
    }
    std::string text;
    sentencepiece::util::Status status = processor_->Decode(pieces, &text);
    NCE_CHECK(status.ok(), "tokenizer decode: sentencepiece: {}", readable(status, "decoding failed"));
    return text;
}

TokenizerKind Tokenizer::kind() const { return pretrained_ ? pretrained_->kind() : TokenizerKind::SentencePiece; }

int64_t Tokenizer::vocab_size() const { return pretrained_ ? pretrained_->vocab_size() : processor_->GetPieceSize(); }

int64_t Tokenizer::pad_id() const { return pretrained_ ? pretrained_->pad_id() : std::max(processor_->pad_id(), 0); }

int64_t Tokenizer::unknown_id() const { return pretrained_ ? pretrained_->unknown_id() : processor_->unk_id(); }

}  // namespace nce::data
