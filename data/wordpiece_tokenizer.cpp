#include "data/wordpiece_tokenizer.h"

#include <fstream>

#include "data/json_file.h"
#include "data/tokenizer_json.h"

namespace nce::data {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Far above any real vocabulary (BERT's 30,522, multilingual ones 250,002), so that a hostile
// file's id cannot make load allocate without bound.
constexpr int64_t kMaxPieceId = 10'000'000;

std::string string_field_or(const json& object, const char* key, const std::string& otherwise) {
    if (!object.is_object() || !object.contains(key) || object[key].is_null()) return otherwise;
    const json& value = object[key];
    if (value.is_string()) return value.get<std::string>();
    // tokenizer_config.json may write a token as {"content": "[UNK]", ...}
    if (value.is_object() && value.contains("content") && value["content"].is_string())
        return value["content"].get<std::string>();
    return otherwise;
}

BertNormalizerOptions read_bert_normalizer(const json& normalizer, const std::string& source) {
    BertNormalizerOptions options;
    auto read_flag = [&](const char* key, bool otherwise) {
        if (!normalizer.contains(key) || normalizer[key].is_null()) return otherwise;
        NCE_CHECK(normalizer[key].is_boolean(), "tokenizer load: '{}': normalizer.{} must be true, false or null",
                  source, key);
        return normalizer[key].get<bool>();
    };
    options.clean_text = read_flag("clean_text", true);
    options.handle_chinese_chars = read_flag("handle_chinese_chars", true);
    options.lowercase = read_flag("lowercase", true);
    if (normalizer.contains("strip_accents") && !normalizer["strip_accents"].is_null())
        options.strip_accents = read_flag("strip_accents", false);
    return options;
}

}  // namespace

void WordPieceTokenizer::add_piece(const std::string& piece, int64_t id, const std::string& source) {
    NCE_CHECK(id >= 0 && id < kMaxPieceId, "tokenizer load: '{}': piece '{}' has id {}, outside [0, {}); the file is "
              "damaged", source, piece, id, kMaxPieceId);
    auto [where, inserted] = ids_.emplace(piece, id);
    NCE_CHECK(inserted, "tokenizer load: '{}': piece '{}' appears twice (ids {} and {}); a vocabulary lists each piece "
              "once: use the model's own file", source, piece, where->second, id);
    if (static_cast<int64_t>(pieces_.size()) <= id) pieces_.resize(static_cast<size_t>(id) + 1);
    NCE_CHECK(pieces_[id].empty(), "tokenizer load: '{}': id {} is given to both '{}' and '{}'; use the model's own "
              "file", source, id, pieces_[id], piece);
    pieces_[id] = piece;
}

void WordPieceTokenizer::finish(const std::string& source, const std::string& unknown_token,
                                const std::string& pad_token) {
    NCE_CHECK(!ids_.empty(), "tokenizer load: '{}' has no pieces; pass the model's own vocabulary", source);
    auto unknown = ids_.find(unknown_token);
    NCE_CHECK(unknown != ids_.end(), "tokenizer load: '{}': the unknown token '{}' is not in the vocabulary; pass the "
              "model's own vocabulary", source, unknown_token);
    unknown_id_ = unknown->second;
    auto pad = ids_.find(pad_token);
    if (pad != ids_.end()) pad_id_ = pad->second;
}

std::shared_ptr<WordPieceTokenizer> WordPieceTokenizer::from_tokenizer_json(const fs::path& path) {
    const std::string source = path.string();
    const json file = read_tokenizer_json(path);
    const json& model = file["model"];
    std::shared_ptr<WordPieceTokenizer> tokenizer(new WordPieceTokenizer());

    NCE_CHECK(model.contains("vocab") && model["vocab"].is_object(),
              "tokenizer load: '{}': model.vocab must be an object of piece: id; pass the model's own tokenizer.json",
              source);
    for (const auto& [piece, id] : model["vocab"].items()) {
        NCE_CHECK(id.is_number_integer(), "tokenizer load: '{}': piece '{}' has id {}, not an integer", source, piece,
                  id.dump());
        tokenizer->add_piece(piece, id.get<int64_t>(), source);
    }
    tokenizer->continuing_prefix_ = string_field_or(model, "continuing_subword_prefix", "##");
    if (model.contains("max_input_chars_per_word") && model["max_input_chars_per_word"].is_number_integer())
        tokenizer->max_word_chars_ = model["max_input_chars_per_word"].get<int64_t>();

    for (const TokenizerJsonAddedToken& added : read_added_tokens(file, source)) {
        const std::string content = to_utf8(added.token.content);
        auto known = tokenizer->ids_.find(content);
        if (known == tokenizer->ids_.end()) tokenizer->add_piece(content, added.token.id, source);
        else NCE_CHECK(known->second == added.token.id, "tokenizer load: '{}': added token '{}' has id {} but the "
                       "vocabulary gives it {}; use the model's own tokenizer.json", source, content, added.token.id,
                       known->second);
        // A normalized token is looked for in normalized text: its content is normalized below.
        (added.token.normalized ? tokenizer->normalized_added_tokens_ : tokenizer->raw_added_tokens_)
            .push_back(added.token);
    }

    const json& normalizer = file.contains("normalizer") ? file["normalizer"] : json();
    if (!normalizer.is_null()) {
        const std::string type = string_field_or(normalizer, "type", "");
        NCE_CHECK(type == "BertNormalizer", "tokenizer load: '{}': normalizer '{}' with a WordPiece model, which nce "
                  "does not read; nce reads BERT's (BertNormalizer)", source, type);
        tokenizer->normalizer_ = read_bert_normalizer(normalizer, source);
    }
    if (tokenizer->normalizer_)
        for (AddedToken& token : tokenizer->normalized_added_tokens_)
            token.content = bert_normalize(AlignedText{token.content, std::vector<int64_t>(token.content.size()),
                                                       std::vector<int64_t>(token.content.size())},
                                           *tokenizer->normalizer_).chars;
    const std::string pre_tokenizer =
        file.contains("pre_tokenizer") ? string_field_or(file["pre_tokenizer"], "type", "") : "";
    NCE_CHECK(pre_tokenizer == "BertPreTokenizer", "tokenizer load: '{}': pre_tokenizer '{}' with a WordPiece model, "
              "which nce does not read; nce reads BERT's (BertPreTokenizer)", source, pre_tokenizer);

    SpecialTokensAround around = read_post_processor(file, source);
    for (const std::vector<int64_t>* side : {&around.before, &around.after})
        for (int64_t id : *side)
            NCE_CHECK(id < tokenizer->vocab_size() && !tokenizer->pieces_[id].empty(), "tokenizer load: '{}': the "
                      "post_processor's special token id {} is not in the vocabulary; use the model's own tokenizer.json",
                      source, id);
    tokenizer->ids_before_ = around.before;
    tokenizer->ids_after_ = around.after;
    const json padding = file.contains("padding") ? file["padding"] : json();
    tokenizer->finish(source, string_field_or(model, "unk_token", "[UNK]"), string_field_or(padding, "pad_token", "[PAD]"));
    return tokenizer;
}

std::shared_ptr<WordPieceTokenizer> WordPieceTokenizer::from_vocab_txt(const fs::path& directory) {
    const fs::path vocab_path = directory / "vocab.txt";
    const std::string source = vocab_path.string();
    json config = json::object();
    if (fs::is_regular_file(directory / "tokenizer_config.json")) {
        config = read_json_file((directory / "tokenizer_config.json").string());
        NCE_CHECK(config.is_object(), "tokenizer load: '{}' must hold a JSON object",
                  (directory / "tokenizer_config.json").string());
    }
    std::shared_ptr<WordPieceTokenizer> tokenizer(new WordPieceTokenizer());

    std::ifstream in(vocab_path, std::ios::binary);
    NCE_CHECK(in, "tokenizer load: cannot open '{}': {}", source, std::strerror(errno));
    std::string line;
    for (int64_t id = 0; std::getline(in, line); ++id) tokenizer->add_piece(line, id, source);

    BertNormalizerOptions options;
    options.lowercase = config.value("do_lower_case", true);
    options.handle_chinese_chars = config.value("tokenize_chinese_chars", true);
    if (config.contains("strip_accents") && config["strip_accents"].is_boolean())
        options.strip_accents = config["strip_accents"].get<bool>();
    tokenizer->normalizer_ = options;

    const std::string unknown = string_field_or(config, "unk_token", "[UNK]");
    const std::string cls = string_field_or(config, "cls_token", "[CLS]");
    const std::string sep = string_field_or(config, "sep_token", "[SEP]");
    const std::string pad = string_field_or(config, "pad_token", "[PAD]");
    const std::string mask = string_field_or(config, "mask_token", "[MASK]");
    tokenizer->finish(source, unknown, pad);
    // The special tokens, as transformers' BERT tokenizer adds them: cut out of the raw text.
    for (const std::string& special : {pad, unknown, cls, sep, mask}) {
        auto found = tokenizer->ids_.find(special);
        if (found != tokenizer->ids_.end())
            tokenizer->raw_added_tokens_.push_back({decode_utf8(special).chars, found->second});
    }
    for (const std::string& name : {cls, sep})
        NCE_CHECK(tokenizer->ids_.count(name), "tokenizer load: '{}': the special token '{}' is not in the vocabulary; "
                  "pass the model's own vocab.txt", source, name);
    tokenizer->ids_before_ = {tokenizer->ids_.at(cls)};
    tokenizer->ids_after_ = {tokenizer->ids_.at(sep)};
    return tokenizer;
}

// Greedy longest-match-first over the word's characters.
void WordPieceTokenizer::split_word(const AlignedText& word, ContentPieces& out) const {
    const size_t n = word.size();
    auto whole_word_unknown = [&] {
        out.ids.push_back(unknown_id_);
        out.begin.push_back(word.begin.front());
        out.end.push_back(word.end.back());
    };
    if (static_cast<int64_t>(n) > max_word_chars_) return whole_word_unknown();
    std::string bytes;                 // the word in UTF-8
    std::vector<size_t> offset(n + 1);  // character i starts at bytes[offset[i]]
    for (size_t i = 0; i < n; ++i) {
        offset[i] = bytes.size();
        append_utf8(bytes, word.chars[i]);
    }
    offset[n] = bytes.size();

    ContentPieces pieces;
    std::string candidate;
    for (size_t start = 0; start < n;) {
        size_t stop = n;
        int64_t found = -1;
        for (; stop > start; --stop) {
            candidate.assign(start > 0 ? continuing_prefix_ : "");
            candidate.append(bytes, offset[start], offset[stop] - offset[start]);
            auto where = ids_.find(candidate);
            if (where != ids_.end()) {
                found = where->second;
                break;
            }
        }
        if (found < 0) return whole_word_unknown();
        pieces.ids.push_back(found);
        pieces.begin.push_back(word.begin[start]);
        pieces.end.push_back(word.end[stop - 1]);
        start = stop;
    }
    out.ids.insert(out.ids.end(), pieces.ids.begin(), pieces.ids.end());
    out.begin.insert(out.begin.end(), pieces.begin.begin(), pieces.begin.end());
    out.end.insert(out.end.end(), pieces.end.begin(), pieces.end.end());
}

ContentPieces WordPieceTokenizer::encode_content(const std::string& text) const {
    ContentPieces out;
    auto add_token = [&](const TextSegment& segment) {
        out.ids.push_back(segment.id);
        out.begin.push_back(segment.text.begin.front());
        out.end.push_back(segment.text.end.back());
    };
    for (const TextSegment& raw : split_at_added_tokens(decode_utf8(text), raw_added_tokens_)) {
        if (raw.id >= 0) {
            add_token(raw);
            continue;
        }
        const AlignedText normalized = normalizer_ ? bert_normalize(raw.text, *normalizer_) : raw.text;
        for (const TextSegment& segment : split_at_added_tokens(normalized, normalized_added_tokens_)) {
            if (segment.id >= 0) add_token(segment);
            else
                for (const AlignedText& word : bert_pre_tokenize(segment.text)) split_word(word, out);
        }
    }
    return out;
}

std::string WordPieceTokenizer::decode(const std::vector<int64_t>& ids) const {
    std::string text;
    for (size_t i = 0; i < ids.size(); ++i) {
        NCE_CHECK(ids[i] >= 0 && ids[i] < vocab_size(), "tokenizer decode: id {} is outside the vocabulary [0, {})",
                  ids[i], vocab_size());
        const std::string& piece = pieces_[ids[i]];
        if (i > 0 && piece.rfind(continuing_prefix_, 0) == 0) text += piece.substr(continuing_prefix_.size());
        else text += (i > 0 ? " " : "") + piece;
    }
    // Hugging Face's clean-up of tokenization spaces.
    const std::pair<const char*, const char*> cleanups[] = {
        {" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"}, {" n't", "n't"},
        {" 'm", "'m"}, {" do not", " don't"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
    for (const auto& [from, to] : cleanups) {
        const size_t from_size = std::strlen(from);
        for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + std::strlen(to)))
            text.replace(at, from_size, to);
    }
    return text;
}

}  // namespace nce::data
