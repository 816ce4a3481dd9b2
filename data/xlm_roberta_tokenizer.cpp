#include "data/xlm_roberta_tokenizer.h"

#include <sentencepiece_processor.h>

#include <fstream>

#include "data/tokenizer_model_check.h"
#include "engine/error.h"

namespace nce::data {
namespace {

constexpr int64_t kBegin = 0, kPad = 1, kEnd = 2, kUnknown = 3;
constexpr int64_t kFairseqOffset = 1;  // SentencePiece's piece i is id i + 1
constexpr uintmax_t kMaxSentencePieceModelBytes = 256u << 20;

std::string read_model_bytes(const std::filesystem::path& path) {
    std::error_code error;
    const uintmax_t size = std::filesystem::file_size(path, error);
    NCE_CHECK(!error, "tokenizer load: cannot read '{}': {}", path.string(), error.message());
    NCE_CHECK(size <= kMaxSentencePieceModelBytes, "tokenizer load: '{}' is {} bytes, over the {}-byte limit for a "
              "SentencePiece model; pass the model's own sentencepiece.bpe.model", path.string(), size,
              kMaxSentencePieceModelBytes);
    std::ifstream in(path, std::ios::binary);
    std::string bytes(static_cast<size_t>(size), '\0');
    in.read(bytes.data(), static_cast<std::streamsize>(size));
    NCE_CHECK(in.gcount() == static_cast<std::streamsize>(size), "tokenizer load: reading '{}' failed",
              path.string());
    return bytes;
}

}  // namespace

std::shared_ptr<XlmRobertaTokenizer> XlmRobertaTokenizer::load(const std::filesystem::path& model_file) {
    const std::string bytes = read_model_bytes(model_file);
    check_tokenizer_model(bytes, model_file.string());  // some malformed models make SentencePiece terminate
    std::shared_ptr<XlmRobertaTokenizer> tokenizer(new XlmRobertaTokenizer());
    tokenizer->processor_ = std::make_shared<sentencepiece::SentencePieceProcessor>();
    sentencepiece::util::Status status = tokenizer->processor_->LoadFromSerializedProto(bytes);
    NCE_CHECK(status.ok(), "tokenizer load: '{}' is not a SentencePiece model ({}); pass the model's own "
              "sentencepiece.bpe.model", model_file.string(), status.message());
    const auto& processor = *tokenizer->processor_;
    NCE_CHECK(processor.unk_id() == 0 && processor.PieceToId("<s>") == 1 && processor.PieceToId("</s>") == 2,
              "tokenizer load: '{}' does not start <unk>, <s>, </s> as XLM-RoBERTa's SentencePiece model does; nce "
              "reads XLM-RoBERTa's sentencepiece.bpe.model", model_file.string());
    const int64_t mask = processor.GetPieceSize() + kFairseqOffset;
    const std::pair<const char32_t*, int64_t> specials[] = {
        {U"<s>", kBegin}, {U"<pad>", kPad}, {U"</s>", kEnd}, {U"<unk>", kUnknown}, {U"<mask>", mask}};
    for (const auto& [content, id] : specials) {
        AddedToken token{content, id};
        token.lstrip = id == mask;
        tokenizer->special_tokens_.push_back(token);
    }
    tokenizer->ids_before_ = {kBegin};
    tokenizer->ids_after_ = {kEnd};
    return tokenizer;
}

int64_t XlmRobertaTokenizer::vocab_size() const { return processor_->GetPieceSize() + kFairseqOffset + 1; }

int64_t XlmRobertaTokenizer::to_model_id(int piece) const {
    return piece == processor_->unk_id() ? kUnknown : piece + kFairseqOffset;
}

ContentPieces XlmRobertaTokenizer::encode_content(const std::string& text) const {
    ContentPieces out;
    for (const TextSegment& segment : split_at_added_tokens(decode_utf8(text), special_tokens_)) {
        const int64_t first_byte = segment.text.begin.front(), last_byte = segment.text.end.back();
        if (segment.id >= 0) {
            out.ids.push_back(segment.id);
            out.begin.push_back(first_byte);
            out.end.push_back(last_byte);
            continue;
        }
        const std::string piece_text = text.substr(first_byte, last_byte - first_byte);
        sentencepiece::ImmutableSentencePieceText encoded = processor_->EncodeAsImmutableProto(piece_text);
        for (const auto& piece : encoded.pieces()) {
            out.ids.push_back(to_model_id(static_cast<int>(piece.id())));
            out.begin.push_back(first_byte + piece.begin());
            out.end.push_back(first_byte + piece.end());
        }
    }
    return out;
}

std::string XlmRobertaTokenizer::decode(const std::vector<int64_t>& ids) const {
    std::vector<int> pieces;
    for (int64_t id : ids) {
        NCE_CHECK(id >= 0 && id < vocab_size(), "tokenizer decode: id {} is outside the vocabulary [0, {})", id,
                  vocab_size());
        if (id == kBegin || id == kPad || id == kEnd || id == vocab_size() - 1) continue;  // special tokens
        pieces.push_back(id == kUnknown ? processor_->unk_id() : static_cast<int>(id - kFairseqOffset));
    }
    std::string text;
    sentencepiece::util::Status status = processor_->Decode(pieces, &text);
    NCE_CHECK(status.ok(), "tokenizer decode: sentencepiece: {}", status.message());
    return text;
}

}  // namespace nce::data
