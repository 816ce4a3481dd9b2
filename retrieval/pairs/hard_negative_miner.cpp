// Hard-negative mining with margins over a pairs file (hard_negative_miner.h).
#include "retrieval/pairs/hard_negative_miner.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <random>
#include <string_view>
#include <unordered_map>

#include "data/csv_field.h"
#include "data/text_cleaning.h"
#include "engine/error.h"
#include "engine/threads.h"

namespace nce::pairs {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// A whole number from all of `text`, or nothing.
std::optional<int64_t> whole_number(std::string_view text) {
    int64_t value = 0;
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || error != std::errc() || end != text.data() + text.size()) return std::nullopt;
    return value;
}

bool contains(const std::vector<int64_t>& sorted, int64_t value) {
    return std::binary_search(sorted.begin(), sorted.end(), value);
}

}  // namespace

RankRange parse_rank_range(const std::string& text) {
    size_t colon = text.find(':');
    std::optional<int64_t> first, last;
    if (colon != std::string::npos) {
        first = whole_number(std::string_view(text).substr(0, colon));
        last = whole_number(std::string_view(text).substr(colon + 1));
    }
    NCE_CHECK(first && last, "--range '{}': give the ranks as FIRST:LAST, two whole numbers such as 10:100", text);
    NCE_CHECK(*first >= 1, "--range {}: ranks count from 1 (the best candidate); give FIRST >= 1, such as 1:{}", text,
              *last);
    NCE_CHECK(*first <= *last, "--range {}: FIRST must not exceed LAST; give them in order, such as {}:{}", text,
              *last, *first);
    return {*first, *last};
}

void check_mining_settings(const MiningSettings& settings) {
    NCE_CHECK(settings.negatives_per_query >= 1, "--negatives {}: give at least 1 negative per query",
              settings.negatives_per_query);
    NCE_CHECK(settings.range.first >= 1 && settings.range.first <= settings.range.last,
              "--range {}:{}: give 1 <= FIRST <= LAST", settings.range.first, settings.range.last);
    NCE_CHECK(settings.range.last - settings.range.first + 1 >= settings.negatives_per_query,
              "--range {}:{} holds {} ranks, fewer than --negatives {}; widen the range or ask for fewer",
              settings.range.first, settings.range.last, settings.range.last - settings.range.first + 1,
              settings.negatives_per_query);
    if (settings.absolute_margin)
        NCE_CHECK(std::isfinite(*settings.absolute_margin) && *settings.absolute_margin >= 0,
                  "--absolute-margin {}: give a margin >= 0 (0.05 keeps candidates scoring below the positive - 0.05)",
                  *settings.absolute_margin);
    if (settings.relative_margin)
        NCE_CHECK(std::isfinite(*settings.relative_margin) && *settings.relative_margin >= 0 &&
                      *settings.relative_margin < 1,
                  "--relative-margin {}: give a fraction in [0, 1) (0.05 keeps candidates scoring below 95% of the "
                  "positive)",
                  *settings.relative_margin);
    NCE_CHECK(settings.rrf_k >= 1, "the fusion constant must be at least 1, got {}", settings.rrf_k);
}

double margin_threshold(double positive_score, const MiningSettings& settings) {
    double threshold = kInfinity;
    if (settings.absolute_margin) threshold = std::min(threshold, positive_score - *settings.absolute_margin);
    if (settings.relative_margin)
        threshold = std::min(threshold, positive_score - *settings.relative_margin * std::abs(positive_score));
    return threshold;
}

std::vector<int64_t> rank_candidates(const QueryScores& scores, const std::vector<int64_t>& excluded, int64_t depth) {
    std::vector<int64_t> ranked;
    const auto count = static_cast<int64_t>(scores.scores.size());
    for (int64_t candidate = 0; candidate < count; ++candidate) {
        double score = scores.scores[static_cast<size_t>(candidate)];
        if (score > scores.floor && !std::isnan(score) && !contains(excluded, candidate)) ranked.push_back(candidate);
    }
    auto better = [&](int64_t a, int64_t b) {
        double score_a = scores.scores[static_cast<size_t>(a)], score_b = scores.scores[static_cast<size_t>(b)];
        return score_a != score_b ? score_a > score_b : a < b;
    };
    auto keep = static_cast<size_t>(std::max<int64_t>(0, std::min<int64_t>(depth, static_cast<int64_t>(ranked.size()))));
    std::partial_sort(ranked.begin(), ranked.begin() + static_cast<std::ptrdiff_t>(keep), ranked.end(), better);
    ranked.resize(keep);
    return ranked;
}

std::vector<int64_t> reciprocal_rank_fusion(const std::vector<std::vector<int64_t>>& rankings, int64_t rrf_k,
                                            int64_t depth) {
    std::unordered_map<int64_t, double> fused;
    for (const std::vector<int64_t>& ranking : rankings)
        for (size_t rank = 0; rank < ranking.size(); ++rank)
            fused[ranking[rank]] += 1.0 / static_cast<double>(rrf_k + static_cast<int64_t>(rank) + 1);
    std::vector<std::pair<int64_t, double>> ranked(fused.begin(), fused.end());
    std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
        return a.second != b.second ? a.second > b.second : a.first < b.first;
    });
    std::vector<int64_t> result;
    for (size_t i = 0; i < ranked.size() && static_cast<int64_t>(i) < depth; ++i) result.push_back(ranked[i].first);
    return result;
}

QueryNegatives mine_query(const std::vector<QueryScores>& scorers, const std::vector<int64_t>& positives,
                          const std::vector<int64_t>& excluded, const MiningSettings& settings, uint64_t query_index) {
    NCE_CHECK(!scorers.empty(), "mining: no scorer");
    NCE_CHECK(!positives.empty(), "mining: a query without a positive");
    // Per scorer: the ranking, and the threshold from its lowest-scoring positive.
    std::vector<std::vector<int64_t>> rankings;
    std::vector<double> thresholds;
    for (const QueryScores& scores : scorers) {
        double lowest_positive = kInfinity;
        for (int64_t positive : positives)
            lowest_positive = std::min(lowest_positive, scores.scores.at(static_cast<size_t>(positive)));
        thresholds.push_back(margin_threshold(lowest_positive, settings));
        rankings.push_back(rank_candidates(scores, excluded, settings.range.last));
    }
    std::vector<int64_t> ranking = rankings.size() == 1
                                       ? std::move(rankings.front())
                                       : reciprocal_rank_fusion(rankings, settings.rrf_k, settings.range.last);
    auto passes = [&](int64_t candidate) {
        for (size_t s = 0; s < scorers.size(); ++s)
            if (!(scorers[s].scores[static_cast<size_t>(candidate)] < thresholds[s])) return false;
        return true;
    };

    QueryNegatives result;
    const auto wanted = static_cast<size_t>(settings.negatives_per_query);
    std::vector<int64_t> passing;
    for (int64_t rank = settings.range.first; rank <= static_cast<int64_t>(ranking.size()); ++rank) {
        int64_t candidate = ranking[static_cast<size_t>(rank - 1)];
        if (!passes(candidate)) {
            ++result.removed_by_margin;
            continue;
        }
        passing.push_back(candidate);
        if (settings.pick == NegativePick::Top && passing.size() == wanted) break;
    }
    if (settings.pick == NegativePick::Random && passing.size() > wanted) {
        // A draw of `wanted` positions out of passing.size(), kept in rank order.
        std::mt19937_64 generator(settings.seed * 0x9E3779B97F4A7C15ULL + query_index);
        std::vector<size_t> positions(passing.size());
        for (size_t i = 0; i < positions.size(); ++i) positions[i] = i;
        for (size_t i = 0; i < wanted; ++i) {
            std::uniform_int_distribution<size_t> pick(i, positions.size() - 1);
            std::swap(positions[i], positions[pick(generator)]);
        }
        positions.resize(wanted);
        std::sort(positions.begin(), positions.end());
        for (size_t position : positions) result.negatives.push_back(passing[position]);
    } else {
        passing.resize(std::min(passing.size(), wanted));
        result.negatives = std::move(passing);
    }
    return result;
}

MiningInput mining_input(const data::PairsFile& file, const std::vector<std::string>& corpus) {
    MiningInput input;
    input.has_query_id = file.has_query_id;
    // Keys view the file's and the corpus's strings, which outlive this function's maps.
    std::unordered_map<std::string_view, int64_t> candidate_of_text;
    auto add_candidate = [&](const std::string& text) {
        auto [found, inserted] = candidate_of_text.emplace(text, static_cast<int64_t>(input.candidates.size()));
        if (inserted) input.candidates.push_back(text);
        return found->second;
    };
    std::unordered_map<std::string_view, size_t> query_of_key;
    for (const data::PairsRow& row : file.rows) {
        auto [found, inserted] = query_of_key.emplace(row.query_key, input.queries.size());
        if (inserted) input.queries.push_back({file.has_query_id ? row.query_key : "", row.anchor, {}, {}});
        MiningQuery& query = input.queries[found->second];
        int64_t positive = add_candidate(row.positive);
        if (std::find(query.positives.begin(), query.positives.end(), positive) == query.positives.end())
            query.positives.push_back(positive);
        for (const std::string& negative : row.negatives) add_candidate(negative);
    }
    input.file_candidates = static_cast<int64_t>(input.candidates.size());
    for (const std::string& text : corpus) add_candidate(text);

    // Texts equal once white space is collapsed: a positive's or an anchor's twins.
    std::unordered_map<std::string, std::vector<int64_t>> candidates_of_collapsed;
    for (size_t c = 0; c < input.candidates.size(); ++c)
        candidates_of_collapsed[data::collapse_whitespace(input.candidates[c])].push_back(static_cast<int64_t>(c));
    for (MiningQuery& query : input.queries) {
        auto exclude_twins = [&](const std::string& text) {
            auto found = candidates_of_collapsed.find(data::collapse_whitespace(text));
            if (found != candidates_of_collapsed.end())
                query.excluded.insert(query.excluded.end(), found->second.begin(), found->second.end());
        };
        for (int64_t positive : query.positives) {
            query.excluded.push_back(positive);
            exclude_twins(input.candidates[static_cast<size_t>(positive)]);
        }
        exclude_twins(query.anchor);
        std::sort(query.excluded.begin(), query.excluded.end());
        query.excluded.erase(std::unique(query.excluded.begin(), query.excluded.end()), query.excluded.end());
    }
    return input;
}

MiningResult mine_pairs(const MiningInput& input, const std::vector<const CandidateScorer*>& scorers,
                        const MiningSettings& settings, int64_t block) {
    check_mining_settings(settings);
    NCE_CHECK(!scorers.empty(), "mining: no scorer");
    MiningResult result;
    const auto queries = static_cast<int64_t>(input.queries.size());
    const auto candidates = static_cast<int64_t>(input.candidates.size());
    result.negatives.resize(static_cast<size_t>(queries));
    // A block's scores are scorers × block × candidates numbers: kept near 16M (128 MB).
    block = std::clamp<int64_t>((int64_t{1} << 24) / std::max<int64_t>(1, candidates * static_cast<int64_t>(scorers.size())),
                                1, std::max<int64_t>(1, block));
    for (int64_t start = 0; start < queries; start += block) {
        int64_t end = std::min(queries, start + block);
        std::vector<std::string> anchors;
        for (int64_t q = start; q < end; ++q) anchors.push_back(input.queries[static_cast<size_t>(q)].anchor);
        std::vector<std::vector<QueryScores>> by_scorer;
        for (const CandidateScorer* scorer : scorers) {
            by_scorer.push_back(scorer->score(anchors));
            NCE_CHECK(static_cast<int64_t>(by_scorer.back().size()) == end - start,
                      "mining: the {} scorer scored {} queries of {}", scorer->name(), by_scorer.back().size(),
                      end - start);
            for (const QueryScores& scores : by_scorer.back())
                NCE_CHECK(static_cast<int64_t>(scores.scores.size()) == candidates,
                          "mining: the {} scorer gave {} scores for {} candidates", scorer->name(),
                          scores.scores.size(), candidates);
        }
        parallel_for(end - start, 8, [&](int64_t begin, int64_t finish) {
            std::vector<QueryScores> query_scores(by_scorer.size());
            for (int64_t i = begin; i < finish; ++i) {
                for (size_t s = 0; s < by_scorer.size(); ++s)
                    query_scores[s] = std::move(by_scorer[s][static_cast<size_t>(i)]);
                const MiningQuery& query = input.queries[static_cast<size_t>(start + i)];
                result.negatives[static_cast<size_t>(start + i)] =
                    mine_query(query_scores, query.positives, query.excluded, settings, static_cast<uint64_t>(start + i));
            }
        });
    }

    MiningSummary& summary = result.summary;
    summary.queries = queries;
    summary.candidates = candidates;
    for (int64_t q = 0; q < queries; ++q) {
        const QueryNegatives& mined = result.negatives[static_cast<size_t>(q)];
        auto rows = static_cast<int64_t>(input.queries[static_cast<size_t>(q)].positives.size());
        summary.removed_by_margin += mined.removed_by_margin;
        if (static_cast<int64_t>(mined.negatives.size()) == settings.negatives_per_query) {
            ++summary.queries_kept;
            summary.rows_written += rows;
        } else {
            ++summary.queries_dropped;
            summary.rows_dropped += rows;
            if (mined.removed_by_margin > 0) ++summary.dropped_after_margin;
        }
    }
    return result;
}

std::string mined_pairs_csv(const MiningInput& input, const MiningResult& result, int64_t negatives_per_query) {
    NCE_CHECK(result.negatives.size() == input.queries.size(), "mining: {} results for {} queries",
              result.negatives.size(), input.queries.size());
    std::string text = input.has_query_id ? "query_id,anchor,positive" : "anchor,positive";
    for (int64_t k = 1; k <= negatives_per_query; ++k) text += fmt::format(",negative_{}", k);
    text += "\n";
    for (size_t q = 0; q < input.queries.size(); ++q) {
        const QueryNegatives& mined = result.negatives[q];
        if (static_cast<int64_t>(mined.negatives.size()) != negatives_per_query) continue;
        const MiningQuery& query = input.queries[q];
        std::string negatives;
        for (int64_t negative : mined.negatives) negatives += "," + data::csv_field(input.candidates[static_cast<size_t>(negative)]);
        for (int64_t positive : query.positives) {
            if (input.has_query_id) text += data::csv_field(query.query_id) + ",";
            text += data::csv_field(query.anchor) + "," + data::csv_field(input.candidates[static_cast<size_t>(positive)]) +
                    negatives + "\n";
        }
    }
    return text;
}

}  // namespace nce::pairs
