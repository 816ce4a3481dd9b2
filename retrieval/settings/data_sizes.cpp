#include "retrieval/settings/data_sizes.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include <fmt/core.h>

#include "engine/error.h"

namespace nce::retrieval {

int64_t vocabulary_for(const std::vector<std::string>& texts) {
    double words = 0;
    for (const std::string& text : texts) {
        std::istringstream stream(text);
        for (std::string word; stream >> word;) words += 1;
    }
    auto rounded = static_cast<int64_t>(std::llround(6.0 * std::sqrt(words) / 100.0)) * 100;
    return std::clamp(rounded, kSmallestVocabulary, kLargestVocabulary);
}

int64_t length_for(std::vector<int64_t> counts, double fraction, int64_t low, int64_t high) {
    NCE_CHECK(!counts.empty(), "length_for: no texts to size a length from");
    auto position = static_cast<size_t>(std::ceil(fraction * static_cast<double>(counts.size()))) - 1;
    position = std::min(position, counts.size() - 1);
    std::nth_element(counts.begin(), counts.begin() + static_cast<std::ptrdiff_t>(position), counts.end());
    int64_t rounded = (counts[position] + 7) / 8 * 8;
    return std::clamp(rounded, low, high);
}

void size_vocabulary(RunConfig& config, const std::vector<std::string>& tokenizer_texts) {
    if (config.vocab_size != kSizedToData) return;
    config.vocab_size = vocabulary_for(tokenizer_texts);
    fmt::print("sized to the data: vocabulary {} (6 x the square root of the training texts' words; --vocab-size "
               "sets it)\n", config.vocab_size);
}

void size_lengths(RunConfig& config, const data::Tokenizer& tokenizer, const std::vector<std::string>& queries,
                  const std::vector<std::string>& passages) {
    auto token_counts = [&](const std::vector<std::string>& texts, const std::string& prompt) {
        std::vector<int64_t> counts;
        counts.reserve(texts.size());
        for (const std::string& text : texts)
            counts.push_back(static_cast<int64_t>(tokenizer.encode_ids(prompt + text).size()));
        return counts;
    };
    if (config.max_query_length == kSizedToData) {
        NCE_CHECK(!queries.empty(), "no training queries to size --max-query-length from; give the flag");
        config.max_query_length = length_for(token_counts(queries, config.query_prompt), 0.95, 16, 256);
        fmt::print("sized to the data: queries cut at {} tokens (the training queries' 95th percentile, within "
                   "16..256; --max-query-length sets it)\n", config.max_query_length);
    }
    if (config.max_passage_length == kSizedToData) {
        NCE_CHECK(!passages.empty(), "no training passages to size --max-passage-length from; give the flag");
        config.max_passage_length = length_for(token_counts(passages, config.passage_prompt), 0.90, 32, 128);
        fmt::print("sized to the data: passages read {} tokens at a time (the training passages' 90th percentile, "
                   "within 32..128; --max-passage-length sets it)\n", config.max_passage_length);
    }
}

}  // namespace nce::retrieval
