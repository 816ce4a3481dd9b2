#include "retrieval/model/tokenizer_fingerprint.h"

#include <cstdint>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>

#include "engine/error.h"
#include "nn/checkpoint.h"
#include "nn/safetensors.h"

namespace nce::retrieval {

namespace fs = std::filesystem;

std::string tokenizer_fingerprint(const data::Tokenizer& tokenizer) {
    std::ifstream in(tokenizer.model_path(), std::ios::binary);
    NCE_CHECK(in.good(), "tokenizer {}: cannot read it to take its fingerprint", tokenizer.model_path());
    uint64_t hash = 14695981039346656037ull;  // FNV-1a's offset basis
    char buffer[1 << 16];
    while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
        for (std::streamsize i = 0; i < in.gcount(); ++i) {
            hash ^= static_cast<unsigned char>(buffer[i]);
            hash *= 1099511628211ull;  // FNV's 64-bit prime
        }
    }
    return fmt::format("{:016x}", hash);
}

void save_run_model(const std::string& path, nn::EmbeddingModel& model, const data::Tokenizer& tokenizer,
                    std::map<std::string, std::string> metadata) {
    metadata[kTokenizerFingerprintKey] = tokenizer_fingerprint(tokenizer);
    nn::save_model(path, model, metadata);
}

void check_tokenizer_matches(const data::Tokenizer& tokenizer, const nn::EmbeddingModel& model,
                             const std::string& checkpoint) {
    const nn::ModelConfig& config = model.config();
    // A bert folder's embedding may have rows no piece uses (all-MiniLM-L6-v2: 30,522 for as many pieces).
    const bool fits = tokenizer.vocab_size() == config.vocab_size ||
                      (config.kind == "bert" && tokenizer.vocab_size() <= config.vocab_size);
    NCE_CHECK(fits, "checkpoint {}: its vocabulary ({}) does not match the tokenizer {} ({} pieces); use the tokenizer "
              "it was trained with", checkpoint, config.vocab_size, tokenizer.model_path(), tokenizer.vocab_size());
    if (fs::is_directory(checkpoint)) return;  // a model folder: its own tokenizer files are read with it
    const auto metadata = nn::read_safetensors_header(checkpoint).metadata;
    const auto written = metadata.find(kTokenizerFingerprintKey);
    if (written == metadata.end()) return;  // written before fingerprints
    const std::string own = tokenizer_fingerprint(tokenizer);
    NCE_CHECK(own == written->second, "checkpoint {} was trained with another tokenizer than {} (fingerprint {}, "
              "the checkpoint's {}), though both have {} pieces; use the tokenizer of its run", checkpoint,
              tokenizer.model_path(), own, written->second, tokenizer.vocab_size());
}

}  // namespace nce::retrieval
