#include "data/pretrained_tokenizer.h"

#include "data/json_file.h"
#include "data/tokenizer_json.h"
#include "data/unigram_tokenizer.h"
#include "data/wordpiece_tokenizer.h"
#include "data/xlm_roberta_tokenizer.h"

namespace nce::data {
namespace {

namespace fs = std::filesystem;

const char* const kPretrainedFileNames[] = {"tokenizer.json", "vocab.txt", "sentencepiece.bpe.model"};

std::shared_ptr<const PretrainedTokenizer> read_by_file_name(const fs::path& file) {
    const std::string name = file.filename().string();
    if (name == "vocab.txt") return WordPieceTokenizer::from_vocab_txt(file.parent_path());
    if (name == "sentencepiece.bpe.model") return XlmRobertaTokenizer::load(file);
    const nlohmann::json tokenizer_json = read_tokenizer_json(file);
    const std::string type = tokenizer_json_model_type(tokenizer_json);
    if (type == "WordPiece") return WordPieceTokenizer::from_tokenizer_json(file);
    if (type == "Unigram") return UnigramTokenizer::from_tokenizer_json(file);
    fail("tokenizer load: '{}' holds a {} model, which nce does not read; nce reads WordPiece (BERT's) and Unigram "
         "(XLM-RoBERTa's)", file.string(), type.empty() ? "typeless" : "'" + type + "'");
}

// A model's config.json names the rows of its embedding table: every id must have one.
void check_against_model_config(const PretrainedTokenizer& tokenizer, const fs::path& file) {
    const fs::path config_path = file.parent_path() / "config.json";
    if (!fs::is_regular_file(config_path)) return;
    const nlohmann::json config = read_json_file(config_path.string());
    if (!config.is_object() || !config.contains("vocab_size") || !config["vocab_size"].is_number_integer()) return;
    const int64_t rows = config["vocab_size"].get<int64_t>();
    NCE_CHECK(tokenizer.vocab_size() <= rows, "tokenizer load: '{}' gives ids up to {} but '{}' has vocab_size {}; the "
              "tokenizer and the model come from different models: use the folder's own files", file.string(),
              tokenizer.vocab_size() - 1, config_path.string(), rows);
}

}  // namespace

const char* tokenizer_kind_name(TokenizerKind kind) {
    switch (kind) {
        case TokenizerKind::SentencePiece: return "sentencepiece";
        case TokenizerKind::WordPiece: return "wordpiece";
        case TokenizerKind::Unigram: return "unigram";
        case TokenizerKind::XlmRobertaSentencePiece: return "xlm-roberta-sentencepiece";
    }
    return "unknown";
}

fs::path find_pretrained_tokenizer_file(const fs::path& path) {
    if (fs::is_directory(path)) {
        for (const char* name : kPretrainedFileNames)
            if (fs::is_regular_file(path / name)) return path / name;
        return {};
    }
    for (const char* name : kPretrainedFileNames)
        if (path.filename() == name) return path;
    return {};
}

std::shared_ptr<const PretrainedTokenizer> load_pretrained_tokenizer(const fs::path& file) {
    std::shared_ptr<const PretrainedTokenizer> tokenizer = read_by_file_name(file);
    check_against_model_config(*tokenizer, file);
    return tokenizer;
}

}  // namespace nce::data
