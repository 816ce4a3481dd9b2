#include "data/unigram_tokenizer.h"

#include <limits>

#include "data/tokenizer_json.h"
#include "engine/error.h"

namespace nce::data {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr double kUnknownPenalty = 10.0;  // an unknown character scores the lowest piece's score - 10
constexpr char32_t kMetaspace = U'\u2581';  // '▁'

std::string json_type_of(const json& object) {
    return object.is_object() && object.contains("type") && object["type"].is_string() ? object["type"].get<std::string>()
                                                                                        : "";
}

// Runs of two or more spaces become one space covering the run's bytes.
AlignedText collapse_spaces(const AlignedText& text) {
    AlignedText out;
    for (size_t i = 0; i < text.size(); ++i) {
        if (text.chars[i] == U' ' && i + 1 < text.size() && text.chars[i + 1] == U' ') {
            size_t last = i;
            while (last + 1 < text.size() && text.chars[last + 1] == U' ') ++last;
            out.push_back(U' ', text.begin[i], text.end[last]);
            i = last;
            continue;
        }
        out.push_back(text.chars[i], text.begin[i], text.end[i]);
    }
    return out;
}

// Metaspace: ' ' -> '▁', '▁' first when the text does not start with one, then a word
// starts at each '▁' (the '▁' stays at the front of its word).
std::vector<AlignedText> metaspace_words(AlignedText text, bool prepend) {
    for (char32_t& c : text.chars)
        if (c == U' ') c = kMetaspace;
    if (prepend && text.size() > 0 && text.chars[0] != kMetaspace) {
        text.chars.insert(text.chars.begin(), kMetaspace);
        text.begin.insert(text.begin.begin(), text.begin[0]);
        text.end.insert(text.end.begin(), text.begin[0]);
    }
    std::vector<AlignedText> words;
    size_t start = 0;
    for (size_t i = 1; i <= text.size(); ++i)
        if (i == text.size() || text.chars[i] == kMetaspace) {
            if (i > start) words.push_back(text.slice(start, i));
            start = i;
        }
    return words;
}

}  // namespace

void UnigramTokenizer::add_to_trie(const std::string& piece, int64_t id) {
    size_t node = 0;
    for (char c : piece) {
        const uint64_t edge = (static_cast<uint64_t>(node) << 8) | static_cast<unsigned char>(c);
        auto [where, inserted] = trie_edges_.emplace(edge, static_cast<int32_t>(trie_piece_.size()));
        if (inserted) trie_piece_.push_back(-1);
        node = static_cast<size_t>(where->second);
    }
    trie_piece_[node] = id;
}

std::shared_ptr<UnigramTokenizer> UnigramTokenizer::from_tokenizer_json(const fs::path& path) {
    const std::string source = path.string();
    const json file = read_tokenizer_json(path);
    const json& model = file["model"];
    std::shared_ptr<UnigramTokenizer> tokenizer(new UnigramTokenizer());

    NCE_CHECK(model.contains("vocab") && model["vocab"].is_array() && !model["vocab"].empty(),
              "tokenizer load: '{}': a Unigram model's vocab must be a non-empty list of [piece, score]; use the model's "
              "own tokenizer.json", source);
    tokenizer->trie_piece_.push_back(-1);  // the root
    size_t piece_bytes = 0;  // at most one trie node per byte
    for (const json& entry : model["vocab"])
        if (entry.is_array() && !entry.empty() && entry[0].is_string()) piece_bytes += entry[0].get_ref<const std::string&>().size();
    tokenizer->trie_edges_.reserve(piece_bytes);
    tokenizer->trie_piece_.reserve(piece_bytes + 1);
    std::unordered_map<std::string, int64_t> ids;
    double lowest = std::numeric_limits<double>::infinity();
    for (const json& entry : model["vocab"]) {
        NCE_CHECK(entry.is_array() && entry.size() == 2 && entry[0].is_string() && entry[1].is_number(),
                  "tokenizer load: '{}': vocab entry {} is not [piece, score]", source, entry.dump().substr(0, 200));
        const std::string piece = entry[0].get<std::string>();
        const int64_t id = static_cast<int64_t>(tokenizer->pieces_.size());
        NCE_CHECK(!piece.empty() && ids.emplace(piece, id).second, "tokenizer load: '{}': piece '{}' (id {}) is empty or "
                  "appears twice; use the model's own tokenizer.json", source, piece, id);
        tokenizer->pieces_.push_back(piece);
        tokenizer->scores_.push_back(entry[1].get<double>());
        lowest = std::min(lowest, tokenizer->scores_.back());
        tokenizer->add_to_trie(piece, id);
    }
    tokenizer->unknown_score_ = lowest - kUnknownPenalty;
    NCE_CHECK(model.contains("unk_id") && model["unk_id"].is_number_integer() && model["unk_id"].get<int64_t>() >= 0 &&
                  model["unk_id"].get<int64_t>() < tokenizer->vocab_size(),
              "tokenizer load: '{}': model.unk_id must be an id of the vocabulary", source);
    tokenizer->unknown_id_ = model["unk_id"].get<int64_t>();
    NCE_CHECK(!(model.contains("byte_fallback") && model["byte_fallback"].is_boolean() &&
                model["byte_fallback"].get<bool>()),
              "tokenizer load: '{}': a Unigram model with byte_fallback, which nce does not read", source);

    for (const TokenizerJsonAddedToken& added : read_added_tokens(file, source)) {
        NCE_CHECK(added.token.id < tokenizer->vocab_size() && tokenizer->pieces_[added.token.id] == to_utf8(added.token.content),
                  "tokenizer load: '{}': added token '{}' (id {}) is not that piece of the vocabulary; use the model's own "
                  "tokenizer.json", source, to_utf8(added.token.content), added.token.id);
        NCE_CHECK(!added.token.normalized, "tokenizer load: '{}': added token '{}' is normalized, which nce reads only for "
                  "WordPiece models", source, to_utf8(added.token.content));
        tokenizer->raw_added_tokens_.push_back(added.token);
    }

    // The normalizer: Precompiled, Replace(" {2,}", " "), or a Sequence of them, or none.
    const json normalizer = file.contains("normalizer") ? file["normalizer"] : json();
    std::vector<json> steps;
    if (json_type_of(normalizer) == "Sequence" && normalizer.contains("normalizers") && normalizer["normalizers"].is_array())
        steps.assign(normalizer["normalizers"].begin(), normalizer["normalizers"].end());
    else if (!normalizer.is_null())
        steps.push_back(normalizer);
    for (size_t i = 0; i < steps.size(); ++i) {
        const json& step = steps[i];
        const std::string type = json_type_of(step);
        const bool collapse = type == "Replace" && step.contains("pattern") && step["pattern"].is_object() &&
                              step["pattern"].value("Regex", "") == " {2,}" && step.value("content", "") == " ";
        const bool charsmap = type == "Precompiled" && step.contains("precompiled_charsmap") &&
                              step["precompiled_charsmap"].is_string() && !tokenizer->charsmap_ && i == 0;
        NCE_CHECK(collapse || charsmap, "tokenizer load: '{}': normalizer step {} ({}) is not one nce reads with a Unigram "
                  "model; nce reads XLM-RoBERTa's: Precompiled, then Replace of \" {{2,}}\" by \" \"", source, i,
                  step.dump().substr(0, 120));
        if (collapse) tokenizer->collapse_spaces_ = true;
        else tokenizer->charsmap_.emplace(decode_base64(step["precompiled_charsmap"].get<std::string>(), source), source);
    }

    const json pre_tokenizer = file.contains("pre_tokenizer") ? file["pre_tokenizer"] : json();
    NCE_CHECK(json_type_of(pre_tokenizer) == "Metaspace" && pre_tokenizer.value("replacement", "") == "\u2581" &&
                  pre_tokenizer.value("split", true),
              "tokenizer load: '{}': pre_tokenizer {} is not one nce reads with a Unigram model; nce reads XLM-RoBERTa's "
              "Metaspace (replacement '\u2581', split)", source, pre_tokenizer.dump().substr(0, 120));
    const std::string prepend = pre_tokenizer.value("prepend_scheme", "");
    NCE_CHECK(prepend.empty() || prepend == "always" || prepend == "never", "tokenizer load: '{}': Metaspace "
              "prepend_scheme '{}', which nce does not read (it reads always and never)", source, prepend);
    tokenizer->prepend_space_ = prepend.empty() ? pre_tokenizer.value("add_prefix_space", true) : prepend == "always";

    SpecialTokensAround around = read_post_processor(file, source);
    for (int64_t id : around.before) NCE_CHECK(id < tokenizer->vocab_size(), "tokenizer load: '{}': special id {} is outside "
                                               "the vocabulary", source, id);
    for (int64_t id : around.after) NCE_CHECK(id < tokenizer->vocab_size(), "tokenizer load: '{}': special id {} is outside "
                                              "the vocabulary", source, id);
    tokenizer->ids_before_ = around.before;
    tokenizer->ids_after_ = around.after;
    const json padding = file.contains("padding") ? file["padding"] : json();
    if (padding.is_object() && padding.contains("pad_id") && padding["pad_id"].is_number_integer())
        tokenizer->pad_id_ = padding["pad_id"].get<int64_t>();
    else if (ids.count("<pad>"))
        tokenizer->pad_id_ = ids.at("<pad>");
    return tokenizer;
}

// Viterbi over the word's bytes: best[e] is the best split of bytes [0, e) and the piece that
// ends it. Positions are visited in order and pieces from shortest to longest; a later split
// replaces an earlier one only when it scores strictly higher, as Hugging Face's does.
void UnigramTokenizer::split_word(const AlignedText& word, ContentPieces& out) const {
    std::string bytes;
    std::vector<size_t> char_at_byte;  // the character each byte belongs to
    for (size_t i = 0; i < word.size(); ++i) {
        append_utf8(bytes, word.chars[i]);
        char_at_byte.resize(bytes.size(), i);
    }
    const size_t size = bytes.size();
    struct Best {
        double score = 0;
        int64_t start = -1;  // -1: no split reaches here yet
        int64_t id = 0;
    };
    std::vector<Best> best(size + 1);
    best[0].start = 0;
    for (size_t start = 0; start < size;) {
        size_t char_bytes = 1;
        while (start + char_bytes < size && char_at_byte[start + char_bytes] == char_at_byte[start]) ++char_bytes;
        const double so_far = best[start].score;
        auto offer = [&](size_t end, double score, int64_t id) {
            if (best[end].start < 0 || so_far + score > best[end].score) best[end] = {so_far + score, static_cast<int64_t>(start), id};
        };
        bool covers_one_character = false;
        size_t node = 0;
        for (size_t end = start; end < size; ++end) {
            auto edge = trie_edges_.find((static_cast<uint64_t>(node) << 8) | static_cast<unsigned char>(bytes[end]));
            if (edge == trie_edges_.end()) break;
            node = static_cast<size_t>(edge->second);
            const int64_t id = trie_piece_[node];
            if (id < 0) continue;
            offer(end + 1, scores_[id], id);
            covers_one_character |= end + 1 - start == char_bytes;
        }
        if (!covers_one_character) offer(start + char_bytes, unknown_score_, unknown_id_);
        start += char_bytes;
    }
    // Back from the end; neighbouring unknowns become one.
    std::vector<std::pair<size_t, size_t>> spans;  // byte spans of the chosen pieces, last first
    std::vector<int64_t> chosen;
    for (size_t end = size; end > 0;) {
        const Best& node = best[end];
        const size_t start = static_cast<size_t>(node.start);
        if (node.id == unknown_id_ && !chosen.empty() && chosen.back() == unknown_id_) spans.back().first = start;
        else spans.emplace_back(start, end), chosen.push_back(node.id);
        end = start;
    }
    for (size_t k = chosen.size(); k-- > 0;) {
        out.ids.push_back(chosen[k]);
        out.begin.push_back(word.begin[char_at_byte[spans[k].first]]);
        out.end.push_back(word.end[char_at_byte[spans[k].second - 1]]);
    }
}

ContentPieces UnigramTokenizer::encode_content(const std::string& text) const {
    ContentPieces out;
    for (const TextSegment& segment : split_at_added_tokens(decode_utf8(text), raw_added_tokens_)) {
        if (segment.id >= 0) {
            out.ids.push_back(segment.id);
            out.begin.push_back(segment.text.begin.front());
            out.end.push_back(segment.text.end.back());
            continue;
        }
        AlignedText normalized = charsmap_ ? charsmap_->normalize(segment.text) : segment.text;
        if (collapse_spaces_) normalized = collapse_spaces(normalized);
        for (const AlignedText& word : metaspace_words(normalized, prepend_space_)) split_word(word, out);
    }
    return out;
}

std::string UnigramTokenizer::decode(const std::vector<int64_t>& ids) const {
    const std::string_view metaspace = "\u2581";
    std::string text;
    for (int64_t id : ids) {
        NCE_CHECK(id >= 0 && id < vocab_size(), "tokenizer decode: id {} is outside the vocabulary [0, {})", id,
                  vocab_size());
        const std::string_view piece = pieces_[id];
        for (size_t at = 0; at < piece.size();) {
            const bool space = piece.substr(at, metaspace.size()) == metaspace;
            if (space) text += ' ';
            else text += piece[at];
            at += space ? metaspace.size() : 1;
        }
    }
    return !text.empty() && text[0] == ' ' ? text.substr(1) : text;
}

}  // namespace nce::data
