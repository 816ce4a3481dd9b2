// Reading the parts of a Hugging Face tokenizer.json that every kind of model shares: the
// file itself (size-capped, a JSON object with a "model" object), its added tokens and the
// special tokens its post-processor puts around a text. Each problem is one nce::Error line
// naming the file and the fix.
//
//   "post_processor": {"type": "TemplateProcessing",
//                      "single": [{"SpecialToken": {"id": "[CLS]"}}, {"Sequence": {"id": "A"}},
//                                 {"SpecialToken": {"id": "[SEP]"}}],
//                      "special_tokens": {"[CLS]": {"ids": [101]}, "[SEP]": {"ids": [102]}}}
//   -> before {101}, after {102}
#pragma once
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "data/added_tokens.h"

namespace nce::data {

// The parsed file; its "model" is an object with a string "type".
nlohmann::json read_tokenizer_json(const std::filesystem::path& path);
// model.type of a tokenizer.json ("WordPiece", "Unigram", "BPE", ...), read and checked.
std::string tokenizer_json_model_type(const nlohmann::json& file);

struct TokenizerJsonAddedToken {
    AddedToken token;
    bool special = false;
};
// "added_tokens": [{"id", "content", "normalized", "lstrip", "rstrip", "single_word", "special"}].
// single_word tokens are refused: nce does not read them.
std::vector<TokenizerJsonAddedToken> read_added_tokens(const nlohmann::json& file, const std::string& source);

struct SpecialTokensAround {
    std::vector<int64_t> before, after;
};
// TemplateProcessing's "single" template, BertProcessing or RobertaProcessing ("cls": [name,
// id] before, "sep" after), or none (null).
SpecialTokensAround read_post_processor(const nlohmann::json& file, const std::string& source);

}  // namespace nce::data
