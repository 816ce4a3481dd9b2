// The SentencePiece tokenizer (training on generated English and Korean text, save and load,
// padding, mask and truncation) and the six batch strategies on small hand-built datasets
// (exact composition, determinism by seed, the no-duplicates sampler).
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <sentencepiece_trainer.h>

#include "data/batching.h"
#include "data/identifier_words.h"
#include "data/no_duplicates_sampler.h"
#include "data/text_prefix.h"
#include "data/tokenizer.h"
#include "tests/test_helpers.h"

namespace {

namespace fs = std::filesystem;
using namespace nce;
using nce::testing::TemporaryDirectory;
using namespace nce::data;

// ---------------------------------------------------------------------------------------
// Tokenizer

// UTF-8 bytes of one Unicode code point below U+10000.
std::string utf8(uint32_t code_point) {
    std::string bytes;
    if (code_point < 0x80) {
        bytes += static_cast<char>(code_point);
    } else if (code_point < 0x800) {
        bytes += static_cast<char>(0xC0 | (code_point >> 6));
        bytes += static_cast<char>(0x80 | (code_point & 0x3F));
    } else {
        bytes += static_cast<char>(0xE0 | (code_point >> 12));
        bytes += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
        bytes += static_cast<char>(0x80 | (code_point & 0x3F));
    }
    return bytes;
}

// 300 made-up words of 1 to 3 syllables. English syllables: consonant + vowel ("ka", "lo").
// Korean syllables: Hangul is composed by arithmetic, U+AC00 + (initial·21 + vowel)·28 + final,
// here from 10 initials, 6 vowels and 3 finals (none, ㄴ, ㄹ): 180 syllables.
std::vector<std::string> made_up_words(bool korean, Generator& generator) {
    std::vector<std::string> words;
    for (int64_t w = 0; w < 300; ++w) {
        std::string word;
        for (int64_t syllables = 1 + generator.next_index(3); syllables > 0; --syllables) {
            if (korean) {
                uint32_t initial = generator.next_index(10), vowel = generator.next_index(6) * 2;
                uint32_t final_consonant = std::vector<uint32_t>{0, 4, 8}[generator.next_index(3)];
                word += utf8(0xAC00 + (initial * 21 + vowel) * 28 + final_consonant);
            } else {
                word += "bcdfghklmnprstvw"[generator.next_index(16)];
                word += "aeiou"[generator.next_index(5)];
            }
        }
        words.push_back(word);
    }
    return words;
}

// `count` sentences of 4 to 9 words, alternately English-like and Korean, drawn from the same
// made-up words for every seed (the seed picks the sentences).
std::vector<std::string> generated_sentences(int64_t count, uint64_t seed) {
    Generator word_generator(2024);
    const std::vector<std::string> english = made_up_words(false, word_generator);
    const std::vector<std::string> korean = made_up_words(true, word_generator);
    Generator generator(seed);
    std::vector<std::string> sentences;
    for (int64_t s = 0; s < count; ++s) {
        const std::vector<std::string>& words = s % 2 == 0 ? english : korean;
        int64_t length = 4 + generator.next_index(6);
        std::string sentence;
        for (int64_t w = 0; w < length; ++w) {
            if (w > 0) sentence += ' ';
            sentence += words[generator.next_index(static_cast<int64_t>(words.size()))];
        }
        sentences.push_back(sentence);
    }
    return sentences;
}

TokenizerOptions small_vocabulary(TokenizerModelType type) {
    TokenizerOptions options;
    options.vocab_size = 300;
    options.model_type = type;
    return options;
}

// Probes: the first five generated sentences of seed 1, and text the training never saw.
const std::vector<std::string> kProbeTexts = [] {
    std::vector<std::string> texts = generated_sentences(5, 1);
    texts.push_back("the cat sat on the mat, 학교에서 공부하는 학생");
    texts.push_back("x");
    return texts;
}();

TEST_CASE("tokenizer: train, save, load gives identical ids, for unigram and bpe") {
    std::vector<std::string> sentences = generated_sentences(3000, 7);
    for (TokenizerModelType type : {TokenizerModelType::Unigram, TokenizerModelType::Bpe}) {
        CAPTURE(tokenizer_model_type_name(type));
        TemporaryDirectory directory;
        Tokenizer trained = Tokenizer::train(sentences, small_vocabulary(type), directory.path.string());
        CHECK(fs::is_regular_file(directory.path / "tokenizer.model"));
        CHECK(trained.vocab_size() == 300);
        CHECK(trained.pad_id() == 0);
        CHECK(trained.unknown_id() == 1);

        for (const std::string& path : {directory.path.string(), (directory.path / "tokenizer.model").string()}) {
            Tokenizer loaded = Tokenizer::load(path);
            CHECK(loaded.vocab_size() == trained.vocab_size());
            for (const std::string& text : kProbeTexts) CHECK(loaded.encode_ids(text) == trained.encode_ids(text));
            EncodedBatch a = trained.encode(kProbeTexts, 64), b = loaded.encode(kProbeTexts, 64);
            CHECK(a.ids.to_indices() == b.ids.to_indices());
            CHECK(a.mask.to_indices() == b.mask.to_indices());
        }
    }
}

TEST_CASE("tokenizer: Korean text encodes into known pieces and decodes back") {
    // character_coverage 0.9995 (the default) may leave the rarest syllables out as <unk>;
    // 1.0 keeps every character it saw.
    for (double coverage : {0.9995, 1.0}) {
        CAPTURE(coverage);
        TemporaryDirectory directory;
        TokenizerOptions options = small_vocabulary(TokenizerModelType::Unigram);
        options.character_coverage = coverage;
        Tokenizer tokenizer = Tokenizer::train(generated_sentences(3000, 11), options, directory.path.string());
        // Held-out Korean sentences (odd positions, another seed) from the same words.
        std::vector<std::string> sentences = generated_sentences(400, 99);
        int64_t tokens = 0, unknown = 0;
        for (size_t s = 1; s < sentences.size(); s += 2) {
            std::vector<int64_t> ids = tokenizer.encode_ids(sentences[s]);
            int64_t unknown_here = std::count(ids.begin(), ids.end(), tokenizer.unknown_id());
            tokens += static_cast<int64_t>(ids.size());
            unknown += unknown_here;
            if (unknown_here == 0) CHECK(tokenizer.decode(ids) == sentences[s]);
        }
        CHECK(tokens > 1000);
        CHECK(unknown <= tokens / 100);
        if (coverage == 1.0) CHECK(unknown == 0);
        // A Hangul syllable never seen in training is <unk>, and only that piece.
        std::vector<int64_t> without = tokenizer.encode_ids(sentences[1]);
        std::vector<int64_t> with = tokenizer.encode_ids(sentences[1] + " 뷁");
        CHECK(std::count(with.begin(), with.end(), tokenizer.unknown_id()) ==
              1 + std::count(without.begin(), without.end(), tokenizer.unknown_id()));
    }
}

TEST_CASE("tokenizer: encode_with_offsets gives encode_ids' pieces, each at the bytes of the text it came from") {
    TemporaryDirectory directory;
    Tokenizer tokenizer =
        Tokenizer::train(generated_sentences(3000, 11), small_vocabulary(TokenizerModelType::Unigram), directory.path.string());
    std::vector<std::string> sentences = generated_sentences(50, 7);
    sentences.push_back("  two  spaces and a rare 뷁 syllable ");
    for (const std::string& text : sentences) {
        CAPTURE(text);
        Tokenizer::PiecesWithOffsets pieces = tokenizer.encode_with_offsets(text);
        CHECK(pieces.ids == tokenizer.encode_ids(text));
        REQUIRE(pieces.begin.size() == pieces.ids.size());
        REQUIRE(pieces.end.size() == pieces.ids.size());
        int64_t previous_end = 0;
        for (size_t i = 0; i < pieces.ids.size(); ++i) {
            CHECK(pieces.begin[i] >= previous_end);  // in order, never overlapping
            CHECK(pieces.begin[i] <= pieces.end[i]);
            CHECK(pieces.end[i] <= static_cast<int64_t>(text.size()));
            previous_end = pieces.end[i];
            // A known piece decodes to the text it covers (less the word-boundary space).
            std::string covered = text.substr(static_cast<size_t>(pieces.begin[i]),
                                              static_cast<size_t>(pieces.end[i] - pieces.begin[i]));
            std::string decoded = tokenizer.decode({pieces.ids[i]});
            if (pieces.ids[i] != tokenizer.unknown_id() && covered.find(' ') == std::string::npos)
                CHECK(decoded.find(covered) != std::string::npos);
        }
    }
}

TEST_CASE("identifier words: names split into lower-case words, each byte traced to the byte it came from") {
    CHECK(identifier_words("getLineNumber(self)").text == "get line number ( self ) ");
    CHECK(identifier_words("line_number").text == "line _ number");
    CHECK(identifier_words("HTTPServer").text == "http server");
    // An acronym's plural s stays on it; a capital followed by a word still starts one.
    CHECK(identifier_words("IPAs and URLs").text == "ipas and urls");
    CHECK(identifier_words("getURLs()").text == "get urls (  ) ");
    CHECK(identifier_words("HTTPSetup").text == "http setup");
    CHECK(identifier_words("IDsList").text == "ids list");
    CHECK(identifier_words("utf8Decode").text == "utf8 decode");
    CHECK(identifier_words("os.path.join(a, b)").text == "os . path . join ( a ,  b ) ");
    CHECK(identifier_words("Return the value.").text == "return the value . ");
    CHECK(identifier_words("학교 ABC").text == "학교 abc");
    CHECK(identifier_words("").text.empty());
    IdentifierWords words = identifier_words("aB_c");  // "a b _ c"
    CHECK(words.text == "a b _ c");
    CHECK(words.source == std::vector<int64_t>{0, 1, 1, 2, 2, 3, 3});  // an added space: the byte after it
    CHECK(words.added == std::vector<bool>{false, true, false, true, false, true, false});
    // Twice reads as once, up to runs of spaces (SentencePiece reads a run as one).
    auto squeezed = [](std::string text) {
        text.erase(std::unique(text.begin(), text.end(), [](char a, char b) { return a == ' ' && b == ' '; }), text.end());
        return text;
    };
    for (const std::string text : {"getHTTPResponse_code", "__init__", "x = self._cache[keyName]"})
        CHECK(squeezed(identifier_words(identifier_words(text).text).text) == squeezed(identifier_words(text).text));
}

// Lines of made-up code: a docstring's words, then the same words as a snake_case and a
// camelCase name ("the kabo lemi" / "kabo_lemi = kaboLemi()").
std::vector<std::string> generated_code_lines(int64_t count) {
    Generator generator(31);
    const std::vector<std::string> words = made_up_words(false, generator);
    std::vector<std::string> lines;
    for (int64_t l = 0; l < count; ++l) {
        const std::string& first = words[generator.next_index(static_cast<int64_t>(words.size()))];
        std::string second = words[generator.next_index(static_cast<int64_t>(words.size()))];
        std::string capitalised = second;
        capitalised[0] = static_cast<char>(capitalised[0] - 'a' + 'A');
        lines.push_back(fmt::format("\"\"\"Return the {} {}.\"\"\"\n{}_{} = {}{}()", first, second, first, second, first,
                                    capitalised));
    }
    return lines;
}

TEST_CASE("tokenizer: identifier_words gives a docstring's words and the code's names the same pieces, kept by save and load") {
    const std::vector<std::string> lines = generated_code_lines(2000);
    TemporaryDirectory plain_directory, words_directory;
    TokenizerOptions options = small_vocabulary(TokenizerModelType::Unigram);
    Tokenizer plain = Tokenizer::train(lines, options, plain_directory.path.string());
    options.identifier_words = true;
    Tokenizer trained = Tokenizer::train(lines, options, words_directory.path.string());
    Tokenizer loaded = Tokenizer::load(words_directory.path.string());
    CHECK_FALSE(plain.reads_identifier_words());
    CHECK(trained.reads_identifier_words());
    CHECK(loaded.reads_identifier_words());
    CHECK(trained.vocab_size() == 300);

    // Words between spaces are cut into pieces one by one, so the ids of "a b" are those of
    // "a" followed by those of "b".
    auto joined = [&](const std::vector<std::string>& words) {
        std::vector<int64_t> ids;
        for (const std::string& word : words) {
            std::vector<int64_t> word_ids = loaded.encode_ids(word);
            ids.insert(ids.end(), word_ids.begin(), word_ids.end());
        }
        return ids;
    };
    int64_t plain_camel_matches = 0;
    for (const std::string& line : generated_code_lines(20)) {
        CAPTURE(line);
        CHECK(loaded.encode_ids(line) == trained.encode_ids(line));
        // "Return the kabo lemi." names "kabo lemi"; the code names it "kabo_lemi" and "kaboLemi".
        const size_t the = line.find("the ") + 4, dot = line.find('.');
        const std::string prose = line.substr(the, dot - the);
        const std::string first = prose.substr(0, prose.find(' ')), second = prose.substr(prose.find(' ') + 1);
        const std::string snake = line.substr(line.find('\n') + 1, line.find(" = ") - line.find('\n') - 1);
        const std::string camel = line.substr(line.find(" = ") + 3, line.size() - line.find(" = ") - 5);
        CHECK(loaded.encode_ids(prose) == joined({first, second}));
        CHECK(loaded.encode_ids(camel) == joined({first, second}));
        CHECK(loaded.encode_ids(snake) == joined({first, "_", second}));
        // A name after punctuation still starts a word: "self.kaboLemi", "f(kabo_lemi)".
        CHECK(loaded.encode_ids("self." + camel) == joined({"self", ".", first, second}));
        CHECK(loaded.encode_ids("f(" + snake + ")") == joined({"f", "(", first, "_", second, ")"}));
        plain_camel_matches += plain.encode_ids(camel) == plain.encode_ids(prose);

        // Offsets point into the text as given: each piece covers the bytes it was read from
        // (a piece of added spaces alone covers none).
        const std::string code = "self." + camel + "(" + snake + ")";
        Tokenizer::PiecesWithOffsets pieces = loaded.encode_with_offsets(code);
        CHECK(pieces.ids == loaded.encode_ids(code));
        int64_t previous_end = 0;
        for (size_t i = 0; i < pieces.ids.size(); ++i) {
            CHECK(pieces.begin[i] >= previous_end);
            CHECK(pieces.end[i] <= static_cast<int64_t>(code.size()));
            std::string covered = identifier_words(code.substr(static_cast<size_t>(pieces.begin[i]),
                                                                static_cast<size_t>(pieces.end[i] - pieces.begin[i]))).text;
            covered.erase(std::remove(covered.begin(), covered.end(), ' '), covered.end());
            if (pieces.ids[i] != loaded.unknown_id()) CHECK(loaded.decode({pieces.ids[i]}).find(covered) != std::string::npos);
            previous_end = pieces.end[i];
        }
    }
    CHECK(plain_camel_matches == 0);  // without identifier words, "kaboLemi" and "kabo lemi" never share all pieces
}

TEST_CASE("tokenizer: a model of the first identifier-words rule (punctuation attached) is refused at load") {
    TemporaryDirectory directory;
    {
        std::ofstream lines(directory.file("lines.txt"));
        for (const std::string& line : generated_code_lines(300)) lines << line << "\n";
    }
    // Trained by SentencePiece directly, with the first rule's marker, as such a model was.
    const std::string prefix = (directory.path / "tokenizer").string();
    sentencepiece::util::Status status = sentencepiece::SentencePieceTrainer::Train(
        "--input=" + directory.file("lines.txt") + " --model_prefix=" + prefix +
        " --vocab_size=120 --pad_id=0 --unk_id=1 --bos_id=-1 --eos_id=-1 --minloglevel=2"
        " --control_symbols=<identifier-words>");
    REQUIRE(status.ok());
    CHECK_ERROR_MENTIONS(Tokenizer::load(directory.path.string()), "first rule");
}

TEST_CASE("tokenizer: ids and mask are right-padded, capped at max_length, and agree with encode_ids") {
    TemporaryDirectory directory;
    Tokenizer tokenizer = Tokenizer::train(generated_sentences(2000, 3), small_vocabulary(TokenizerModelType::Unigram),
                                           directory.path.string());
    for (int64_t max_length : {1, 3, 6, 1000}) {
        CAPTURE(max_length);
        EncodedBatch encoded = tokenizer.encode(kProbeTexts, max_length);
        // Reference by plain loops from each text's own ids.
        std::vector<std::vector<int64_t>> expected;
        size_t longest = 0;
        for (const std::string& text : kProbeTexts) {
            std::vector<int64_t> ids = tokenizer.encode_ids(text);
            if (static_cast<int64_t>(ids.size()) > max_length) ids.resize(max_length);
            longest = std::max(longest, ids.size());
            expected.push_back(ids);
        }
        const int64_t batch = static_cast<int64_t>(kProbeTexts.size()), length = static_cast<int64_t>(longest);
        REQUIRE(encoded.ids.shape() == Shape{batch, length});
        REQUIRE(encoded.mask.shape() == Shape{batch, length});
        CHECK(encoded.ids.dtype() == Dtype::Int64);
        CHECK(encoded.mask.dtype() == Dtype::Int64);
        CHECK(length <= max_length);
        std::vector<int64_t> ids = encoded.ids.to_indices(), mask = encoded.mask.to_indices();
        for (int64_t b = 0; b < batch; ++b)
            for (int64_t t = 0; t < length; ++t) {
                bool is_token = t < static_cast<int64_t>(expected[b].size());
                CHECK(mask[b * length + t] == (is_token ? 1 : 0));
                CHECK(ids[b * length + t] == (is_token ? expected[b][t] : tokenizer.pad_id()));
            }
    }
    // The long text really is cut: it has more than 3 tokens of its own.
    CHECK(tokenizer.encode_ids(kProbeTexts[0]).size() > 3);
}

TEST_CASE("text prefix: a huge text is read only as far as its kept tokens, and the ids are the same") {
    // The bound: whole when short, (max + 2) * kMostBytesPerToken bytes otherwise, whitespace
    // runs counted once, never inside a UTF-8 character.
    CHECK(prefix_for_tokens("short text", 4) == "short text");
    const std::string ascii(12000, 'x');
    std::string hangul;
    for (int i = 0; i < 4000; ++i) hangul += "\xea\xb0\x80";  // U+AC00, 3 bytes
    std::string_view cut = prefix_for_tokens(hangul, 1);
    CHECK(cut.size() % 3 == 0);
    CHECK(cut.size() <= static_cast<size_t>(3 * kMostBytesPerToken));
    CHECK(cut.size() >= static_cast<size_t>(3 * kMostBytesPerToken) - 2);
    const std::string spaced = std::string(100000, ' ') + "word";
    CHECK(prefix_for_tokens(spaced, 0) == spaced);  // one run of spaces counts as one byte
    CHECK(prefix_for_tokens(ascii, std::numeric_limits<int64_t>::max()) == ascii);
    CHECK(prefix_for_tokens(ascii, 1).size() == static_cast<size_t>(3 * kMostBytesPerToken));

    // The ids a text gives through encode, and its truncation count, equal those of the whole
    // text, for a text hundreds of times longer than the prefix.
    TemporaryDirectory directory;
    Tokenizer tokenizer = Tokenizer::train(generated_sentences(2000, 3), small_vocabulary(TokenizerModelType::Unigram),
                                           directory.path.string());
    std::string long_text;
    for (const std::string& sentence : generated_sentences(8000, 5)) long_text += sentence + "  \n ";
    REQUIRE(long_text.size() > 200000);
    for (int64_t max_length : {1, 8, 128, 512}) {
        CAPTURE(max_length);
        REQUIRE(prefix_for_tokens(long_text, max_length).size() < long_text.size());
        std::vector<int64_t> whole = tokenizer.encode_ids(long_text);
        whole.resize(static_cast<size_t>(max_length));
        EncodedBatch encoded = tokenizer.encode({long_text}, max_length);
        CHECK(encoded.ids.to_indices() == whole);
        CHECK(tokenizer.encode_ids(std::string(prefix_for_tokens(long_text, max_length))).size() >
              static_cast<size_t>(max_length));  // still counted as truncated
    }
}

TEST_CASE("tokenizer: bad input and bad options are one-line errors naming what to change") {
    TemporaryDirectory directory;
    std::vector<std::string> sentences = generated_sentences(500, 5);
    TokenizerOptions too_large = small_vocabulary(TokenizerModelType::Unigram);
    too_large.vocab_size = 50000;
    CHECK_ERROR_MENTIONS(Tokenizer::train(sentences, too_large, directory.path.string()), "vocab_size");
    CHECK_FALSE(fs::exists(directory.path / "tokenizer.model"));  // nothing written on failure
    TokenizerOptions bad_coverage = small_vocabulary(TokenizerModelType::Bpe);
    bad_coverage.character_coverage = 0.5;
    CHECK_ERROR_MENTIONS(Tokenizer::train(sentences, bad_coverage, directory.path.string()), "character_coverage");
    CHECK_ERROR_MENTIONS(Tokenizer::train({"", "  "}, small_vocabulary(TokenizerModelType::Unigram),
                                          directory.path.string()),
                         "no text");
    CHECK_ERROR_MENTIONS(parse_tokenizer_model_type("wordpiece"), "unigram or bpe");

    CHECK_ERROR_MENTIONS(Tokenizer::load((directory.path / "missing").string()), "no model file");
    fs::create_directories(directory.path);
    std::string not_a_model = (directory.path / "not_a.model").string();
    { std::ofstream(not_a_model) << "hello"; }
    CHECK_ERROR_MENTIONS(Tokenizer::load(not_a_model), "not a SentencePiece model");

    Tokenizer tokenizer = Tokenizer::train(sentences, small_vocabulary(TokenizerModelType::Unigram),
                                           directory.path.string());
    CHECK_ERROR_MENTIONS(tokenizer.encode({"the cat", ""}, 8), "text 1 of 2 gives no tokens");
    CHECK_ERROR_MENTIONS(tokenizer.encode({"the cat"}, 0), "max_length");
    CHECK_ERROR_MENTIONS(tokenizer.encode({}, 8), "no texts");
}

// ---------------------------------------------------------------------------------------
// Batching

// The dataset of data/batching.h's examples, plus q3 with four answers:
//   q0 "how to brew?"    a0 [5] rank 0   a1 [2] rank 1   a2 [-1] rank 2
//   q1 "best hops?"      a3 [3] rank 0
//   q2 "what is ale?"    a4 [4] rank 0   a5 [0] rank 1
//   q3 "why foam?"       a6 [9] rank 0   a7 [7] rank 1   a8 [1] rank 2   a9 [-3] rank 3
// Relevance entries are listed out of order on purpose.
RetrievalDataset small_dataset() {
    RetrievalDataset dataset;
    dataset.name = "small";
    for (const char* text : {"how to brew?", "best hops?", "what is ale?", "why foam?"})
        dataset.queries.push_back({text, text, ""});
    for (int passage = 0; passage < 10; ++passage)
        dataset.passages.push_back({fmt::format("a{}", passage), fmt::format("answer text {}", passage), ""});
    auto answer = [&](int64_t query, int64_t passage, double score, int64_t rank) {
        dataset.relevance.push_back({query, passage, score, rank, false});
    };
    answer(0, 2, -1, 2);
    answer(0, 0, 5, 0);
    answer(0, 1, 2, 1);
    answer(1, 3, 3, 0);
    answer(2, 5, 0, 1);
    answer(2, 4, 4, 0);
    answer(3, 9, -3, 3);
    answer(3, 6, 9, 0);
    answer(3, 8, 1, 2);
    answer(3, 7, 7, 1);
    return dataset;
}

// A row as a comparable tuple: (query, passage, rank, score, negatives).
using RowKey = std::tuple<int64_t, int64_t, int64_t, double, std::vector<int64_t>>;
RowKey key_of(const BatchRow& row) { return {row.query, row.passage, row.rank, row.score, row.negatives}; }

std::multiset<RowKey> all_rows(const BatchPlan& plan) {
    std::multiset<RowKey> rows;
    for (const Batch& batch : plan.batches)
        for (const BatchRow& row : batch.rows) rows.insert(key_of(row));
    return rows;
}

BatchOptions options_for(BatchStrategy strategy, int64_t batch_size, uint64_t seed = 1) {
    BatchOptions options;
    options.strategy = strategy;
    options.batch_size = batch_size;
    options.seed = seed;
    return options;
}

// Every batch: at most batch_size rows; qid is 0, 1, ... by question in row order, a
// question's rows are adjacent and share its qid.
void check_batch_layout(const BatchPlan& plan, int64_t batch_size) {
    for (const Batch& batch : plan.batches) {
        CHECK(static_cast<int64_t>(batch.rows.size()) <= batch_size);
        CHECK(!batch.rows.empty());
        int64_t expected_qid = 0;
        for (size_t i = 0; i < batch.rows.size(); ++i) {
            if (i > 0 && batch.rows[i].query != batch.rows[i - 1].query) ++expected_qid;
            CHECK(batch.rows[i].qid == expected_qid);
        }
    }
}

TEST_CASE("batching infonce: one row per question with its best answer") {
    BatchPlan plan = make_batches(small_dataset(), options_for(BatchStrategy::InfoNce, 3));
    CHECK(all_rows(plan) == std::multiset<RowKey>{{0, 0, 0, 5.0, {}}, {1, 3, 0, 3.0, {}}, {2, 4, 0, 4.0, {}},
                                                  {3, 6, 0, 9.0, {}}});
    CHECK(plan.batches.size() == 2);  // 3 + 1 rows
    check_batch_layout(plan, 3);
}

TEST_CASE("batching multiple_positives: a row per good answer, rank <= max_positive_rank or score > 0") {
    BatchOptions options = options_for(BatchStrategy::MultiplePositives, 8);
    options.max_positive_rank = 0;
    CHECK(all_rows(make_batches(small_dataset(), options)) ==
          std::multiset<RowKey>{{0, 0, 0, 5.0, {}}, {0, 1, 1, 2.0, {}}, {1, 3, 0, 3.0, {}}, {2, 4, 0, 4.0, {}},
                                {3, 6, 0, 9.0, {}}, {3, 7, 1, 7.0, {}}, {3, 8, 2, 1.0, {}}});
    options.max_positive_rank = 1;  // a5 (score 0, rank 1) joins; a2 and a9 (rank 2, 3; score < 0) stay out
    BatchPlan plan = make_batches(small_dataset(), options);
    CHECK(all_rows(plan) == std::multiset<RowKey>{{0, 0, 0, 5.0, {}}, {0, 1, 1, 2.0, {}}, {1, 3, 0, 3.0, {}},
                                                  {2, 4, 0, 4.0, {}}, {2, 5, 1, 0.0, {}}, {3, 6, 0, 9.0, {}},
                                                  {3, 7, 1, 7.0, {}}, {3, 8, 2, 1.0, {}}});
    check_batch_layout(plan, 8);
    for (const Batch& batch : plan.batches)  // best first within a question
        for (size_t i = 1; i < batch.rows.size(); ++i)
            if (batch.rows[i].qid == batch.rows[i - 1].qid) CHECK(batch.rows[i].rank > batch.rows[i - 1].rank);
}

TEST_CASE("batching hard_negative: every answer of a question, best first, under one qid") {
    BatchPlan plan = make_batches(small_dataset(), options_for(BatchStrategy::HardNegative, 6));
    std::multiset<RowKey> expected;
    for (const Relevance& relevance : small_dataset().relevance)
        expected.insert({relevance.query, relevance.passage, relevance.rank, relevance.score, {}});
    CHECK(all_rows(plan) == expected);
    check_batch_layout(plan, 6);
    // Within a batch, the rows of one question come best first: passage order is rank order.
    for (const Batch& batch : plan.batches)
        for (size_t i = 1; i < batch.rows.size(); ++i)
            if (batch.rows[i].qid == batch.rows[i - 1].qid) CHECK(batch.rows[i].rank == batch.rows[i - 1].rank + 1);
    // batch_size 3 cuts q3 to its three best answers and says so.
    BatchPlan small = make_batches(small_dataset(), options_for(BatchStrategy::HardNegative, 3));
    CHECK(all_rows(small).count({3, 9, 3, -3.0, {}}) == 0);
    CHECK(small.skipped.at("answers beyond batch_size") == 1);
}

TEST_CASE("batching triplet: hard, in-batch and mixed negatives") {
    RetrievalDataset dataset = small_dataset();
    const std::map<int64_t, std::set<int64_t>> lower_answers = {{0, {1, 2}}, {2, {5}}, {3, {7, 8, 9}}};
    const std::map<int64_t, int64_t> best_answer = {{0, 0}, {1, 3}, {2, 4}, {3, 6}};

    BatchOptions options = options_for(BatchStrategy::Triplet, 4);
    BatchPlan hard = make_batches(dataset, options);
    CHECK(hard.skipped.at("question with one answer (no hard negative)") == 1);  // q1
    std::set<int64_t> queries;
    for (const Batch& batch : hard.batches)
        for (const BatchRow& row : batch.rows) {
            queries.insert(row.query);
            CHECK(row.passage == best_answer.at(row.query));
            REQUIRE(row.negatives.size() == 1);
            CHECK(lower_answers.at(row.query).count(row.negatives[0]) == 1);
        }
    CHECK(queries == std::set<int64_t>{0, 2, 3});
    // Over seeds, every lower answer of q3 gets drawn.
    std::set<int64_t> drawn;
    for (uint64_t seed = 0; seed < 40; ++seed)
        for (const Batch& batch : make_batches(dataset, options_for(BatchStrategy::Triplet, 4, seed)).batches)
            for (const BatchRow& row : batch.rows)
                if (row.query == 3) drawn.insert(row.negatives[0]);
    CHECK(drawn == lower_answers.at(3));

    options.triplet_negatives = TripletNegatives::InBatch;
    BatchPlan in_batch = make_batches(dataset, options);
    REQUIRE(in_batch.batches.size() == 1);
    const std::vector<BatchRow>& rows = in_batch.batches[0].rows;
    CHECK(rows.size() == 4);  // every question, q1 included
    for (size_t i = 0; i < rows.size(); ++i) {
        REQUIRE(rows[i].negatives.size() == 1);
        bool another_rows_answer = false;
        for (size_t j = 0; j < rows.size(); ++j) another_rows_answer |= j != i && rows[j].passage == rows[i].negatives[0];
        CHECK(another_rows_answer);
    }

    options.triplet_negatives = TripletNegatives::Mixed;
    for (double fraction : {0.0, 0.5, 1.0}) {
        CAPTURE(fraction);
        options.mixed_hard_fraction = fraction;
        int64_t hard_count = 0, in_batch_count = 0;
        for (uint64_t seed = 0; seed < 20; ++seed) {
            options.seed = seed;
            for (const Batch& batch : make_batches(dataset, options).batches)
                for (const BatchRow& row : batch.rows) {
                    REQUIRE(row.negatives.size() == 1);
                    bool is_hard = lower_answers.count(row.query) && lower_answers.at(row.query).count(row.negatives[0]);
                    bool is_other_best = row.negatives[0] != row.passage &&
                                         std::any_of(best_answer.begin(), best_answer.end(),
                                                     [&](auto& entry) { return entry.second == row.negatives[0]; });
                    CHECK((is_hard || is_other_best));
                    (is_hard ? hard_count : in_batch_count) += 1;
                }
        }
        if (fraction == 0.0) CHECK(hard_count == 0);
        if (fraction == 1.0) CHECK(in_batch_count == 20);  // only q1, which has no lower answer
        if (fraction == 0.5) CHECK((hard_count > 0 && in_batch_count > 20));
    }
}

TEST_CASE("batching listwise: K best answers with scores, batches are rectangles of one K") {
    BatchOptions options = options_for(BatchStrategy::Listwise, 6);
    options.max_answers = 2;
    BatchPlan plan = make_batches(small_dataset(), options);
    CHECK(all_rows(plan) == std::multiset<RowKey>{{0, 0, 0, 5.0, {}}, {0, 1, 1, 2.0, {}}, {2, 4, 0, 4.0, {}},
                                                  {2, 5, 1, 0.0, {}}, {3, 6, 0, 9.0, {}}, {3, 7, 1, 7.0, {}}});
    CHECK(plan.skipped.at("question with one answer (a list needs two)") == 1);
    CHECK(plan.skipped.at("answers beyond max_answers") == 3);

    options.max_answers = 3;  // q0 and q3 give K = 3, q2 gives K = 2: two batches
    plan = make_batches(small_dataset(), options);
    REQUIRE(plan.batches.size() == 2);
    std::map<int64_t, std::set<int64_t>> queries_by_k;
    for (const Batch& batch : plan.batches) {
        const int64_t k = batch.answers_per_query;
        CHECK(batch.rows.size() % k == 0);
        for (size_t i = 0; i < batch.rows.size(); ++i) {
            CHECK(batch.rows[i].qid == static_cast<int64_t>(i) / k);  // groups of K consecutive rows
            CHECK(batch.rows[i].rank == static_cast<int64_t>(i) % k);
            queries_by_k[k].insert(batch.rows[i].query);
        }
    }
    CHECK(queries_by_k == std::map<int64_t, std::set<int64_t>>{{2, {2}}, {3, {0, 3}}});
}

TEST_CASE("batching standardized_test: best answer, its next-best answers (at most 5) as hard negatives") {
    RetrievalDataset dataset = small_dataset();
    // q4 with seven answers a10..a16, ranks 0..6.
    dataset.queries.push_back({"q4", "many answers?", ""});
    for (int64_t k = 0; k < 7; ++k) {
        dataset.passages.push_back({fmt::format("a{}", 10 + k), fmt::format("answer text {}", 10 + k), ""});
        dataset.relevance.push_back({4, 10 + k, 10.0 - k, k, false});
    }
    BatchPlan plan = make_batches(dataset, options_for(BatchStrategy::StandardizedTest, 8));
    CHECK(all_rows(plan) == std::multiset<RowKey>{{0, 0, 0, 5.0, {1, 2}},
                                                  {1, 3, 0, 3.0, {}},
                                                  {2, 4, 0, 4.0, {5}},
                                                  {3, 6, 0, 9.0, {7, 8, 9}},
                                                  {4, 10, 0, 10.0, {11, 12, 13, 14, 15}}});
    for (const Batch& batch : plan.batches)
        for (const BatchRow& row : batch.rows) CHECK(row.negatives.size() <= 5);

    BatchOptions fewer = options_for(BatchStrategy::StandardizedTest, 8);
    fewer.max_hard_negatives = 1;
    for (const Batch& batch : make_batches(dataset, fewer).batches)
        for (const BatchRow& row : batch.rows) CHECK(row.negatives.size() <= 1);
}

// Twenty questions with one to three answers each, for determinism.
RetrievalDataset twenty_questions() {
    RetrievalDataset dataset;
    int64_t passage = 0;
    for (int64_t query = 0; query < 20; ++query) {
        dataset.queries.push_back({fmt::format("q{}", query), fmt::format("question {}", query), ""});
        for (int64_t rank = 0; rank < 1 + query % 3; ++rank, ++passage) {
            dataset.passages.push_back({fmt::format("p{}", passage), fmt::format("passage {}", passage), ""});
            dataset.relevance.push_back({query, passage, 3.0 - rank, rank, false});
        }
    }
    return dataset;
}

std::vector<std::vector<RowKey>> batches_as_keys(const BatchPlan& plan) {
    std::vector<std::vector<RowKey>> batches;
    for (const Batch& batch : plan.batches) {
        batches.emplace_back();
        for (const BatchRow& row : batch.rows) batches.back().push_back(key_of(row));
    }
    return batches;
}

const BatchStrategy kAllStrategies[] = {BatchStrategy::InfoNce,  BatchStrategy::MultiplePositives,
                                        BatchStrategy::HardNegative, BatchStrategy::Triplet,
                                        BatchStrategy::Listwise, BatchStrategy::StandardizedTest};

TEST_CASE("batching: same seed gives the same batches, another seed another order of the same rows") {
    RetrievalDataset dataset = twenty_questions();
    for (BatchStrategy strategy : kAllStrategies) {
        CAPTURE(batch_strategy_name(strategy));
        BatchOptions options = options_for(strategy, 6, 1);
        options.triplet_negatives = TripletNegatives::Mixed;
        BatchPlan first = make_batches(dataset, options), again = make_batches(dataset, options);
        CHECK(batches_as_keys(first) == batches_as_keys(again));
        options.seed = 2;
        BatchPlan other = make_batches(dataset, options);
        CHECK(batches_as_keys(first) != batches_as_keys(other));
        if (strategy != BatchStrategy::Triplet) CHECK(all_rows(first) == all_rows(other));  // triplet draws negatives
    }
}

TEST_CASE("batching by_group: one group's questions side by side, groups in a seeded order, the same rows") {
    // 40 questions in 8 groups of 5, each with its own passage; batches of 5.
    RetrievalDataset dataset;
    for (int q = 0; q < 40; ++q) {
        const std::string group = "g" + std::to_string(q % 8);
        dataset.queries.push_back({"q" + std::to_string(q), "question " + std::to_string(q), group});
        dataset.passages.push_back({"p" + std::to_string(q), "passage " + std::to_string(q), group});
        dataset.relevance.push_back({q, q, 1.0, 0, false});
    }
    const auto groups_per_batch = [&](const BatchPlan& plan) {
        std::vector<size_t> counts;
        for (const Batch& batch : plan.batches) {
            std::set<std::string> groups;
            for (const BatchRow& row : batch.rows) groups.insert(dataset.queries[row.query].group);
            counts.push_back(groups.size());
        }
        return counts;
    };
    BatchOptions options = options_for(BatchStrategy::InfoNce, 5, 3);
    const BatchPlan random = make_batches(dataset, options);
    options.by_group = true;
    const BatchPlan grouped = make_batches(dataset, options);
    CHECK(all_rows(grouped) == all_rows(random));
    for (size_t count : groups_per_batch(grouped)) CHECK(count == 1);  // each batch is one group
    size_t mixed = 0;
    for (size_t count : groups_per_batch(random)) mixed += count > 1;
    CHECK(mixed > 4);
    CHECK(batches_as_keys(make_batches(dataset, options)) == batches_as_keys(grouped));
    options.seed = 4;
    CHECK(batches_as_keys(make_batches(dataset, options)) != batches_as_keys(grouped));
}

// Duplicates on purpose: q1 repeats q0's text; q2's answer p2 has the text of q0's answer
// p0; q3 and q4 share one passage (p3), as KorQuAD's questions share their paragraph; q5's
// second answer repeats its first answer's text; q6, q7 are plain.
RetrievalDataset dataset_with_duplicates() {
    RetrievalDataset dataset;
    for (const char* text : {"same question", "same question", "q2", "q3", "q4", "q5", "q6", "q7"})
        dataset.queries.push_back({text, text, ""});
    for (const char* text : {"shared text", "p1", "shared text", "paragraph", "p4", "p5", "p5", "p7", "p8", "p9",
                             "p10", "p11"})
        dataset.passages.push_back({text, text, ""});
    const std::vector<std::tuple<int64_t, int64_t, int64_t>> answers = {
        {0, 0, 0}, {0, 1, 1}, {1, 4, 0}, {2, 2, 0}, {2, 7, 1}, {3, 3, 0}, {3, 8, 1},
        {4, 3, 0}, {5, 5, 0}, {5, 6, 1}, {5, 9, 2}, {6, 10, 0}, {7, 11, 0}};
    for (auto [query, passage, rank] : answers) dataset.relevance.push_back({query, passage, 2.0 - rank, rank, false});
    return dataset;
}

// True when some batch has a query text in two questions, or a passage text brought by two
// questions or twice by one (rows' answers and hard negatives).
bool has_duplicate_texts(const BatchPlan& plan, const RetrievalDataset& dataset) {
    for (const Batch& batch : plan.batches) {
        std::map<std::string, std::set<int64_t>> questions_of_query_text;
        std::map<std::string, int64_t> passage_text_uses;
        std::set<int64_t> qids;
        for (const BatchRow& row : batch.rows) {
            questions_of_query_text[dataset.queries[row.query].text].insert(row.qid);
            ++passage_text_uses[dataset.passages[row.passage].text];
            if (qids.insert(row.qid).second)  // a question's negatives are listed on each of its rows: count once
                for (int64_t negative : row.negatives) ++passage_text_uses[dataset.passages[negative].text];
        }
        for (auto& [text, questions] : questions_of_query_text)
            if (questions.size() > 1) return true;
        for (auto& [text, uses] : passage_text_uses)
            if (uses > 1) return true;
    }
    return false;
}

TEST_CASE("no-duplicates sampler: no text twice in a batch, for every strategy; every question still lands") {
    RetrievalDataset dataset = dataset_with_duplicates();
    for (BatchStrategy strategy : kAllStrategies) {
        for (uint64_t seed = 0; seed < 10; ++seed) {
            CAPTURE(batch_strategy_name(strategy));
            CAPTURE(seed);
            BatchOptions options = options_for(strategy, 8, seed);  // room for everything: only duplicates split
            BatchPlan plan = make_batches(dataset, options);
            CHECK_FALSE(has_duplicate_texts(plan, dataset));
            check_batch_layout(plan, 8);
            std::set<int64_t> queries;
            for (const Batch& batch : plan.batches)
                for (const BatchRow& row : batch.rows) queries.insert(row.query);
            std::set<int64_t> expected = {0, 1, 2, 3, 4, 5, 6, 7};
            if (strategy == BatchStrategy::Triplet) expected = {0, 2, 3, 5};  // the ones with a lower answer
            if (strategy == BatchStrategy::Listwise) expected = {0, 2, 3, 5};
            CHECK(queries == expected);
            // q5's repeated answer p6 is dropped: its first answer p5 stays.
            CHECK(plan.skipped.at("answer repeating a better answer's text") == 1);
        }
    }
    // The check above can fail: without the sampler, one batch of all questions has duplicates.
    BatchOptions options = options_for(BatchStrategy::InfoNce, 8);
    options.no_duplicates = false;
    BatchPlan plan = make_batches(dataset, options);
    CHECK(plan.batches.size() == 1);
    CHECK(has_duplicate_texts(plan, dataset));
}

TEST_CASE("no-duplicates sampler: the header's example, waiting units go first into the next batch") {
    RetrievalDataset dataset;
    for (const char* text : {"what is ale?", "what is ale?", "best hops?", "why foam?"})
        dataset.queries.push_back({text, text, ""});
    for (const char* text : {"P1", "P2", "P1", "P3"}) dataset.passages.push_back({text, text, ""});
    std::vector<BatchUnit> units = {{0, {0}, 1}, {1, {1}, 1}, {2, {2}, 1}, {3, {3}, 1}};
    CHECK(pack_units(units, dataset, 2, true) == std::vector<std::vector<size_t>>{{0, 3}, {1, 2}});
    CHECK(pack_units(units, dataset, 2, false) == std::vector<std::vector<size_t>>{{0, 1}, {2, 3}});
    // Rows count: a 2-row unit does not fit beside a 2-row unit in a batch of 3.
    std::vector<BatchUnit> wide = {{0, {0}, 2}, {2, {1}, 2}, {3, {3}, 1}};
    CHECK(pack_units(wide, dataset, 3, true) == std::vector<std::vector<size_t>>{{0, 2}, {1}});
    CHECK_ERROR_MENTIONS(pack_units(wide, dataset, 1, true), "takes 2 rows");
}

TEST_CASE("batching: drop_last, tensors and texts of a batch") {
    RetrievalDataset dataset = small_dataset();
    BatchOptions options = options_for(BatchStrategy::InfoNce, 3);
    options.drop_last = true;
    BatchPlan plan = make_batches(dataset, options);
    REQUIRE(plan.batches.size() == 1);
    CHECK(plan.batches[0].rows.size() == 3);
    CHECK(plan.skipped.at("rows of the short last batch (drop_last)") == 1);

    BatchPlan grouped = make_batches(dataset, options_for(BatchStrategy::HardNegative, 10));
    REQUIRE(grouped.batches.size() == 1);
    const Batch& batch = grouped.batches[0];
    std::vector<int64_t> qid = qid_tensor(batch).to_indices(), rank = rank_tensor(batch).to_indices();
    std::vector<double> score = score_tensor(batch, Dtype::Float64).to_vector();
    std::vector<std::string> queries = query_texts(batch, dataset), passages = passage_texts(batch, dataset);
    REQUIRE(qid.size() == batch.rows.size());
    for (size_t i = 0; i < batch.rows.size(); ++i) {
        CHECK(qid[i] == batch.rows[i].qid);
        CHECK(rank[i] == batch.rows[i].rank);
        CHECK(score[i] == batch.rows[i].score);
        CHECK(queries[i] == dataset.queries[batch.rows[i].query].text);
        CHECK(passages[i] == dataset.passages[batch.rows[i].passage].text);
    }
    CHECK(score_tensor(batch, Dtype::Float32).dtype() == Dtype::Float32);

    BatchPlan test = make_batches(dataset, options_for(BatchStrategy::StandardizedTest, 10));
    std::vector<std::string> negatives = negative_texts(test.batches[0], dataset);
    CHECK(negatives.size() == 6);  // q0: 2, q2: 1, q3: 3
    CHECK(std::count(negatives.begin(), negatives.end(), "answer text 9") == 1);
}

TEST_CASE("batching: options out of range and a broken dataset are one-line errors") {
    RetrievalDataset dataset = small_dataset();
    BatchOptions options = options_for(BatchStrategy::InfoNce, 1);
    CHECK_ERROR_MENTIONS(make_batches(dataset, options), "batch_size must be at least 2");
    options = options_for(BatchStrategy::StandardizedTest, 4);
    options.max_hard_negatives = 6;
    CHECK_ERROR_MENTIONS(make_batches(dataset, options), "max_hard_negatives must be in [0, 5]");
    options = options_for(BatchStrategy::Listwise, 4);
    options.max_answers = 1;
    CHECK_ERROR_MENTIONS(make_batches(dataset, options), "max_answers");
    options = options_for(BatchStrategy::Triplet, 4);
    options.mixed_hard_fraction = 1.5;
    CHECK_ERROR_MENTIONS(make_batches(dataset, options), "mixed_hard_fraction");
    CHECK_ERROR_MENTIONS(parse_batch_strategy("pairs"), "choose infonce, multiple_positives");
    CHECK_ERROR_MENTIONS(parse_triplet_negatives("random"), "hard_negative, in_batch or mixed");
    for (BatchStrategy strategy : kAllStrategies) CHECK(parse_batch_strategy(batch_strategy_name(strategy)) == strategy);

    dataset.relevance.push_back({2, 42, 1.0, 0, false});
    CHECK_ERROR_MENTIONS(make_batches(dataset, options_for(BatchStrategy::InfoNce, 4)), "relevance entry 10");
}

}  // namespace
