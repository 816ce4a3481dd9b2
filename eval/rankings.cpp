// Dense, BM25 and fused rankings with scores; the lexical tokens BM25 reads.
#include "eval/rankings.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <unordered_map>

#include "engine/error.h"
#include "eval/exact_search.h"

namespace nce::eval {
namespace {

// The code point at byte i of a UTF-8 string, i moved past it; an invalid byte stands for
// itself (Latin-1), so no text is ever rejected here.
char32_t next_code_point(const std::string& text, size_t& i) {
    unsigned char lead = static_cast<unsigned char>(text[i]);
    int length = lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xE ? 3 : (lead >> 3) == 0x1E ? 4 : 0;
    if (length == 0 || i + static_cast<size_t>(length) > text.size()) {
        ++i;
        return lead;
    }
    char32_t point = length == 1 ? lead : lead & (0x7F >> length);
    for (int k = 1; k < length; ++k) {
        unsigned char next = static_cast<unsigned char>(text[i + static_cast<size_t>(k)]);
        if ((next >> 6) != 0x2) {
            ++i;
            return lead;
        }
        point = (point << 6) | (next & 0x3F);
    }
    i += static_cast<size_t>(length);
    return point;
}

// The runs of code points for which in_word holds, one at a time in `word` (a buffer the
// size of the longest run, not of the text).
template <typename InWord, typename Visit>
void for_each_run(const std::string& text, InWord in_word, std::vector<char32_t>& word, Visit visit) {
    size_t i = 0;
    while (i < text.size()) {
        word.clear();
        while (i < text.size()) {
            char32_t c = next_code_point(text, i);
            if (in_word(c)) {
                word.push_back(c);
            } else if (!word.empty()) {
                break;
            }
        }
        if (!word.empty()) visit();
    }
}

void append_utf8(std::string& out, char32_t point) {
    if (point < 0x80) {
        out += static_cast<char>(point);
    } else if (point < 0x800) {
        out += static_cast<char>(0xC0 | (point >> 6));
        out += static_cast<char>(0x80 | (point & 0x3F));
    } else if (point < 0x10000) {
        out += static_cast<char>(0xE0 | (point >> 12));
        out += static_cast<char>(0x80 | ((point >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (point & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (point >> 18));
        out += static_cast<char>(0x80 | ((point >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((point >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (point & 0x3F));
    }
}

bool is_space(char32_t c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' || c == 0xA0 || c == 0x3000 ||
           (c >= 0x2000 && c <= 0x200B);
}

// ASCII punctuation and the quotes, dots and brackets common in Korean and English text.
bool is_punctuation(char32_t c) {
    if (c < 0x80) return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) ||
                         (c >= 0x7B && c <= 0x7E);
    return c == 0xAB || c == 0xBB || c == 0xB7 || (c >= 0x2010 && c <= 0x2027) || (c >= 0x3001 && c <= 0x3011) ||
           (c >= 0xFF01 && c <= 0xFF0F) || (c >= 0xFF1A && c <= 0xFF20);
}

// Token strings -> ids, shared by the queries and passages of one BM25 ranking.
class TokenVocabulary {
public:
    // The ids of a text's tokens, new tokens numbered as they come.
    std::vector<int64_t> ids(const std::string& text, LexicalTokens tokens) {
        std::vector<int64_t> result;
        for_each_lexical_token(text, tokens, [&](const std::string& token) {
            result.push_back(ids_.try_emplace(token, static_cast<int64_t>(ids_.size())).first->second);
        });
        return result;
    }

private:
    std::unordered_map<std::string, int64_t> ids_;
};

RankedLists from_top_k(const eval::TopK& top) {
    RankedLists lists;
    std::vector<int64_t> indices = top.indices.to_indices();
    std::vector<double> scores = top.scores.to_vector();
    int64_t queries = top.indices.size(0), depth = top.indices.size(1);
    lists.passages.resize(static_cast<size_t>(queries));
    lists.scores.resize(static_cast<size_t>(queries));
    for (int64_t q = 0; q < queries; ++q) {
        for (int64_t r = 0; r < depth; ++r) {
            int64_t passage = indices[static_cast<size_t>(q * depth + r)];
            if (passage < 0) continue;
            lists.passages[static_cast<size_t>(q)].push_back(passage);
            lists.scores[static_cast<size_t>(q)].push_back(scores[static_cast<size_t>(q * depth + r)]);
        }
    }
    return lists;
}

// Min-max normalisation of one list's scores; all equal (or one score): every value 1.
std::vector<double> normalised(const std::vector<double>& scores) {
    if (scores.empty()) return {};
    auto [low, high] = std::minmax_element(scores.begin(), scores.end());
    double range = *high - *low;
    std::vector<double> result(scores.size(), 1.0);
    if (range > 0)
        for (size_t i = 0; i < scores.size(); ++i) result[i] = (scores[i] - *low) / range;
    return result;
}

// The CodeIdentifiers tokens (rankings.h): words of letters, digits and '_', lower-cased, and
// the parts of each word cut at '_', at camelCase humps and where letters meet digits.
void for_each_code_identifier_token(const std::string& text, const std::function<void(const std::string&)>& visit) {
    auto is_word = [](char32_t c) { return c == '_' || c >= 0x80 || (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z'); };
    auto is_upper = [](char32_t c) { return c >= 'A' && c <= 'Z'; };
    auto is_lower = [](char32_t c) { return c >= 'a' && c <= 'z'; };
    auto is_digit = [](char32_t c) { return c >= '0' && c <= '9'; };
    std::vector<char32_t> points;
    std::string token;
    auto lower = [&](size_t start, size_t end) -> const std::string& {
        token.clear();
        for (size_t k = start; k < end; ++k) append_utf8(token, is_upper(points[k]) ? points[k] - 'A' + 'a' : points[k]);
        return token;
    };
    std::vector<std::pair<size_t, size_t>> parts;
    for_each_run(text, is_word, points, [&] {
        const size_t end = points.size();
        visit(lower(0, end));
        // The parts: a cut before '_' runs, before an upper-case letter that follows a lower-case
        // one or starts a capitalised word after capitals ("HTTPServer"), and between letters and digits.
        parts.clear();
        size_t part_start = 0;
        auto close_part = [&](size_t part_end) {
            if (part_end > part_start) parts.emplace_back(part_start, part_end);
        };
        for (size_t k = 0; k < end; ++k) {
            char32_t c = points[k];
            if (c == '_') {
                close_part(k);
                part_start = k + 1;
                continue;
            }
            if (k == part_start) continue;
            char32_t previous = points[k - 1];
            bool hump = is_upper(c) && (is_lower(previous) || is_digit(previous) ||
                                        (is_upper(previous) && k + 1 < end && is_lower(points[k + 1])));
            bool letter_digit = is_digit(c) != is_digit(previous) && previous != '_';
            if (hump || letter_digit) {
                close_part(k);
                part_start = k;
            }
        }
        close_part(end);
        // One part that is the whole word says nothing new.
        if (parts.size() > 1 || (parts.size() == 1 && !(parts.front().first == 0 && parts.front().second == end)))
            for (auto [part_begin, part_end] : parts) visit(lower(part_begin, part_end));
    });
}

}  // namespace

RelevantSets relevant_sets(const data::RetrievalDataset& dataset) {
    RelevantSets relevant(dataset.queries.size());
    for (const data::Relevance& entry : dataset.relevance) {
        NCE_CHECK(entry.query >= 0 && entry.query < static_cast<int64_t>(dataset.queries.size()) && entry.passage >= 0 &&
                      entry.passage < static_cast<int64_t>(dataset.passages.size()),
                  "data set {}: a relevance entry points outside the queries or passages", dataset.name);
        if (!entry.hard_negative) relevant[static_cast<size_t>(entry.query)].push_back(entry.passage);
    }
    for (size_t q = 0; q < relevant.size(); ++q)
        NCE_CHECK(!relevant[q].empty(), "data set {}: query '{}' has no relevant passage, so it cannot be scored",
                  dataset.name, dataset.queries[q].id);
    return relevant;
}

RankedLists dense_rankings(const Tensor& query_embeddings, const Tensor& passage_embeddings, int64_t depth) {
    NCE_CHECK(passage_embeddings.size(0) > 0, "dense search: the corpus is empty");
    int64_t k = std::min(depth, passage_embeddings.size(0));
    return from_top_k(eval::exact_search(query_embeddings, passage_embeddings, k));
}

const char* lexical_tokens_name(LexicalTokens tokens) {
    if (tokens == LexicalTokens::CodeIdentifiers) return "code identifiers";
    return tokens == LexicalTokens::Whitespace ? "whitespace" : "whitespace+bigrams";
}

void for_each_lexical_token(const std::string& text, LexicalTokens tokens,
                            const std::function<void(const std::string&)>& visit) {
    if (tokens == LexicalTokens::CodeIdentifiers) return for_each_code_identifier_token(text, visit);
    auto lower = [](char32_t c) { return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c; };
    std::vector<char32_t> points;
    std::string token;
    for_each_run(text, [](char32_t c) { return !is_space(c); }, points, [&] {
        size_t start = 0, end = points.size();
        while (start < end && is_punctuation(points[start])) ++start;
        while (end > start && is_punctuation(points[end - 1])) --end;
        if (start == end) return;
        token.clear();
        for (size_t k = start; k < end; ++k) append_utf8(token, lower(points[k]));
        visit(token);
        if (tokens == LexicalTokens::WhitespaceAndBigrams && end - start >= 2) {
            for (size_t k = start; k + 1 < end; ++k) {
                token.clear();
                append_utf8(token, lower(points[k]));
                append_utf8(token, lower(points[k + 1]));
                visit(token);
            }
        }
    });
}

std::vector<std::string> lexical_tokens(const std::string& text, LexicalTokens tokens) {
    std::vector<std::string> result;
    for_each_lexical_token(text, tokens, [&](const std::string& token) { result.push_back(token); });
    return result;
}

RankedLists bm25_rankings(const std::vector<std::string>& queries, const std::vector<std::string>& passages,
                          LexicalTokens tokens, eval::Bm25Parameters parameters, int64_t depth) {
    NCE_CHECK(!passages.empty(), "BM25: the corpus is empty (no passages to rank)");
    TokenVocabulary vocabulary;
    std::vector<std::vector<int64_t>> documents, query_ids;
    documents.reserve(passages.size());
    for (const std::string& passage : passages) documents.push_back(vocabulary.ids(passage, tokens));
    for (const std::string& query : queries) query_ids.push_back(vocabulary.ids(query, tokens));
    eval::Bm25Index index(documents, parameters);
    int64_t k = std::min<int64_t>(depth, static_cast<int64_t>(passages.size()));
    return from_top_k(index.search(query_ids, k));
}

RankedLists fuse_rankings(const RankedLists& lexical, const RankedLists& dense, double dense_weight) {
    NCE_CHECK(lexical.passages.size() == dense.passages.size(), "fusion: BM25 ranks {} queries but the model {}",
              lexical.passages.size(), dense.passages.size());
    NCE_CHECK(dense_weight >= 0 && dense_weight <= 1, "fusion: the dense weight must be in [0, 1], got {}", dense_weight);
    RankedLists fused;
    fused.passages.resize(dense.passages.size());
    fused.scores.resize(dense.passages.size());
    for (size_t q = 0; q < dense.passages.size(); ++q) {
        std::unordered_map<int64_t, double> score;
        std::vector<double> lexical_norm = normalised(lexical.scores[q]), dense_norm = normalised(dense.scores[q]);
        for (size_t r = 0; r < lexical.passages[q].size(); ++r)
            score[lexical.passages[q][r]] += (1 - dense_weight) * lexical_norm[r];
        for (size_t r = 0; r < dense.passages[q].size(); ++r) score[dense.passages[q][r]] += dense_weight * dense_norm[r];
        std::vector<std::pair<int64_t, double>> ranked(score.begin(), score.end());
        std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
            return a.second != b.second ? a.second > b.second : a.first < b.first;
        });
        size_t keep = std::max(lexical.passages[q].size(), dense.passages[q].size());
        if (ranked.size() > keep) ranked.resize(keep);
        for (const auto& [passage, value] : ranked) {
            fused.passages[q].push_back(passage);
            fused.scores[q].push_back(value);
        }
    }
    return fused;
}

Rankings passage_lists(const RankedLists& rankings) { return rankings.passages; }

FusionChoice choose_fusion_weight(const RankedLists& lexical, const RankedLists& dense,
                                  const RelevantSets& relevant) {
    FusionChoice best{0.0, -1.0};
    for (int step = 0; step <= 20; ++step) {
        double weight = step / 20.0;
        RankedLists fused = fuse_rankings(lexical, dense, weight);
        double mrr = eval::retrieval_metrics(fused.passages, relevant, {10}).at(10).mrr;
        if (mrr > best.validation_mrr) best = {weight, mrr};
    }
    return best;
}

}  // namespace nce::eval
