#include "data/tokenizer_json.h"

#include "data/json_file.h"

namespace nce::data {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// XLM-RoBERTa's tokenizer.json is 17 MB; a file far larger is not a tokenizer.
constexpr uintmax_t kMaxTokenizerJsonBytes = 256u << 20;

bool json_flag(const json& object, const char* key) {
    return object.contains(key) && object[key].is_boolean() && object[key].get<bool>();
}

// The ids of a TemplateProcessing special token, by its name in the template.
std::vector<int64_t> template_token_ids(const json& processor, const std::string& name, const std::string& source) {
    const json& specials = processor.contains("special_tokens") ? processor["special_tokens"] : json();
    NCE_CHECK(specials.is_object() && specials.contains(name) && specials[name].contains("ids") &&
                  specials[name]["ids"].is_array(),
              "tokenizer load: '{}': post_processor's template uses '{}', which its special_tokens do not give ids; "
              "use the model's own tokenizer.json", source, name);
    std::vector<int64_t> ids;
    for (const json& id : specials[name]["ids"]) {
        NCE_CHECK(id.is_number_integer() && id.get<int64_t>() >= 0,
                  "tokenizer load: '{}': special token '{}' has id {}, not an id", source, name, id.dump());
        ids.push_back(id.get<int64_t>());
    }
    return ids;
}

// BertProcessing's and RobertaProcessing's ["[CLS]", 101].
int64_t named_id(const json& processor, const char* key, const std::string& source) {
    const json& pair = processor.contains(key) ? processor[key] : json();
    NCE_CHECK(pair.is_array() && pair.size() == 2 && pair[1].is_number_integer() && pair[1].get<int64_t>() >= 0,
              "tokenizer load: '{}': post_processor.{} must be [token, id]; use the model's own tokenizer.json", source,
              key);
    return pair[1].get<int64_t>();
}

}  // namespace

json read_tokenizer_json(const fs::path& path) {
    std::error_code error;
    const uintmax_t size = fs::file_size(path, error);
    NCE_CHECK(!error, "tokenizer load: cannot read '{}': {}", path.string(), error.message());
    NCE_CHECK(size <= kMaxTokenizerJsonBytes,
              "tokenizer load: '{}' is {} bytes, over the {}-byte limit for a tokenizer.json; pass the model's own file",
              path.string(), size, kMaxTokenizerJsonBytes);
    json file = read_json_file(path.string());
    NCE_CHECK(file.is_object() && file.contains("model") && file["model"].is_object(),
              "tokenizer load: '{}' has no \"model\" object; pass a Hugging Face tokenizer.json", path.string());
    return file;
}

std::string tokenizer_json_model_type(const json& file) {
    const json& model = file["model"];
    if (model.contains("type") && model["type"].is_string()) return model["type"].get<std::string>();
    // Files written by old versions of tokenizers have no "type": their WordPiece models are
    // known by the fields only WordPiece has.
    if (model.contains("continuing_subword_prefix") && model.contains("max_input_chars_per_word")) return "WordPiece";
    return "";
}

std::vector<TokenizerJsonAddedToken> read_added_tokens(const json& file, const std::string& source) {
    std::vector<TokenizerJsonAddedToken> tokens;
    if (!file.contains("added_tokens") || file["added_tokens"].is_null()) return tokens;
    NCE_CHECK(file["added_tokens"].is_array(), "tokenizer load: '{}': added_tokens must be a list", source);
    for (const json& entry : file["added_tokens"]) {
        NCE_CHECK(entry.is_object() && entry.contains("id") && entry["id"].is_number_integer() &&
                      entry["id"].get<int64_t>() >= 0 && entry.contains("content") && entry["content"].is_string() &&
                      !entry["content"].get<std::string>().empty(),
                  "tokenizer load: '{}': an added token needs an id and a non-empty content, got {}", source,
                  entry.dump().substr(0, 200));
        const std::string content = entry["content"].get<std::string>();
        NCE_CHECK(!json_flag(entry, "single_word"), "tokenizer load: '{}': added token '{}' is single_word, which nce does "
                  "not read", source, content);
        TokenizerJsonAddedToken added;
        added.token.content = decode_utf8(content).chars;
        added.token.id = entry["id"].get<int64_t>();
        added.token.normalized = json_flag(entry, "normalized");
        added.token.lstrip = json_flag(entry, "lstrip");
        added.token.rstrip = json_flag(entry, "rstrip");
        added.special = json_flag(entry, "special");
        tokens.push_back(std::move(added));
    }
    return tokens;
}

SpecialTokensAround read_post_processor(const json& file, const std::string& source) {
    SpecialTokensAround around;
    const json& processor = file.contains("post_processor") ? file["post_processor"] : json();
    if (processor.is_null()) return around;
    const std::string type =
        processor.contains("type") && processor["type"].is_string() ? processor["type"].get<std::string>() : "";
    if (type == "BertProcessing" || type == "RobertaProcessing") {
        around.before = {named_id(processor, "cls", source)};
        around.after = {named_id(processor, "sep", source)};
        return around;
    }
    NCE_CHECK(type == "TemplateProcessing", "tokenizer load: '{}': post_processor '{}', which nce does not read; nce "
              "reads TemplateProcessing, BertProcessing and RobertaProcessing", source, type);
    NCE_CHECK(processor.contains("single") && processor["single"].is_array(),
              "tokenizer load: '{}': post_processor has no \"single\" template", source);
    bool seen_sequence = false;
    for (const json& piece : processor["single"]) {
        if (piece.contains("Sequence")) {
            NCE_CHECK(!seen_sequence, "tokenizer load: '{}': post_processor's single template holds the text twice",
                      source);
            seen_sequence = true;
            continue;
        }
        NCE_CHECK(piece.contains("SpecialToken") && piece["SpecialToken"].contains("id") &&
                      piece["SpecialToken"]["id"].is_string(),
                  "tokenizer load: '{}': post_processor's template piece {} is neither Sequence nor SpecialToken",
                  source, piece.dump().substr(0, 200));
        std::vector<int64_t> ids = template_token_ids(processor, piece["SpecialToken"]["id"].get<std::string>(), source);
        std::vector<int64_t>& side = seen_sequence ? around.after : around.before;
        side.insert(side.end(), ids.begin(), ids.end());
    }
    NCE_CHECK(seen_sequence, "tokenizer load: '{}': post_processor's single template has no Sequence", source);
    return around;
}

}  // namespace nce::data
