// Settings sized to the data (retrieval/settings/data_sizes.h): the vocabulary rule, the length
// rule, and that a value the user chose is kept.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "retrieval/settings/data_sizes.h"
#include "data/tokenizer.h"

using namespace nce::retrieval;

namespace {

// `count` texts of `words` words each.
std::vector<std::string> texts_of(int count, int words) {
    std::string text;
    for (int w = 0; w < words; ++w) text += "word" + std::to_string(w % 37) + " ";
    return std::vector<std::string>(static_cast<size_t>(count), text);
}

}  // namespace

TEST_CASE("data sizes: the vocabulary is 6 x the root of the words, rounded to 100, within 400..8000") {
    CHECK(vocabulary_for(texts_of(1000, 100)) == 1900);  // 100,000 words: 6 x 316.2 = 1897
    CHECK(vocabulary_for(texts_of(1000, 300)) == 3300);  // 300,000 words: 6 x 547.7 = 3286
    CHECK(vocabulary_for(texts_of(10, 10)) == kSmallestVocabulary);      // 100 words: 60
    CHECK(vocabulary_for(texts_of(20000, 200)) == kLargestVocabulary);  // 4,000,000 words: 12,000
    CHECK(vocabulary_for({}) == kSmallestVocabulary);
    CHECK(vocabulary_for({"  spaces\tand\nnewlines  split words  "}) == kSmallestVocabulary);
}

TEST_CASE("data sizes: a length is a percentile rounded up to a multiple of 8, within its range") {
    std::vector<int64_t> counts;
    for (int64_t i = 1; i <= 100; ++i) counts.push_back(i);  // 1 .. 100 tokens
    CHECK(length_for(counts, 0.90, 16, 128) == 96);   // the 90th value is 90, rounded up to 96
    CHECK(length_for(counts, 0.95, 16, 128) == 96);   // 95 -> 96
    CHECK(length_for(counts, 1.00, 16, 64) == 64);    // 100 -> 104, held at 64
    CHECK(length_for({3, 1, 2}, 0.9, 16, 128) == 16);  // short texts: held at 16
    CHECK(length_for({40}, 0.5, 16, 128) == 40);
    CHECK_THROWS(length_for({}, 0.9, 16, 128));
}

TEST_CASE("data sizes: only the settings left at -1 are sized") {
    RunConfig config;
    config.vocab_size = 777;
    size_vocabulary(config, texts_of(1000, 100));
    CHECK(config.vocab_size == 777);
    config.vocab_size = kSizedToData;
    size_vocabulary(config, texts_of(1000, 100));
    CHECK(config.vocab_size == 1900);
}

TEST_CASE("data sizes: long queries are read up to 256 tokens, long passages in windows of 128") {
    // Queries and passages of 400 words each: both past their caps, so the caps are what show.
    const std::filesystem::path folder =
        std::filesystem::temp_directory_path() / ("nce_test_data_sizes_" + std::to_string(getpid()));
    std::vector<std::string> texts = texts_of(20, 400);
    nce::data::TokenizerOptions options;
    options.vocab_size = 60;
    options.exact_vocab_size = false;
    nce::data::Tokenizer tokenizer = nce::data::Tokenizer::train(texts, options, folder.string());
    REQUIRE(tokenizer.encode_ids(texts[0]).size() > 256);
    RunConfig config;
    config.max_query_length = kSizedToData;
    config.max_passage_length = kSizedToData;
    size_lengths(config, tokenizer, texts, texts);
    CHECK(config.max_query_length == 256);
    CHECK(config.max_passage_length == 128);
    std::filesystem::remove_all(folder);
}
