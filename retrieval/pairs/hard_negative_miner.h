// Hard negatives for a pairs file (data/pairs_reader.h), mined from a ranking of every text
// the file holds (and a corpus), with NV-Retriever's positive-aware false-negative filter.
//
// Candidates: each distinct text among the file's positives and negatives, in order of first
// appearance, then each distinct corpus text not already among them. Texts are compared as
// the reader keeps them (byte for byte), as pairs_dataset compares them.
//
// Queries: one per distinct query_key (query_id, else the anchor text), in order of first
// appearance; its positives are the positives of all its rows. A query never gets as a
// negative a candidate whose text, with its white space collapsed (data/text_cleaning.h),
// equals one of its positives or its anchor: "a  b" and "a b " are one text here.
//
// Scorers: each gives every candidate a score for the query (BM25, a model's cosine). Per
// scorer, the query's positives are left out and the other candidates ranked by score, best
// first, ties by lower candidate index; a candidate scoring at or below the scorer's floor is
// not ranked (BM25's floor is 0: a text sharing no word with the query is no harder than a
// random one). Each ranking is cut at `range.last`.
//
// Several scorers: reciprocal rank fusion of their cut rankings,
//     fused(c) = sum over scorers s of 1 / (rrf_k + rank_s(c))     (rank from 1; missing: 0)
// ranked by fused score, ties by lower candidate index, cut at `range.last`. RRF, not the
// min-max fusion of eval/rankings.h, because it needs no weight to be tuned on
// labelled queries and ignores the scorers' units.
//
// The margin filter (NV-Retriever, Moreira et al. 2024), per scorer used, against the
// scorer's score of the query's positive. With several positives, the lowest of their
// scores: a candidate scoring above a known answer is as likely an answer, so the strictest
// threshold is the one that removes false negatives best.
//   absolute margin M:  keep c only if score(c) < positive - M           (TopK-MarginPos)
//   relative margin R:  keep c only if score(c) < positive - R · |positive|
//                       = positive · (1 - R) for a positive score > 0     (TopK-PercPos; 95%: R = 0.05)
// The |positive| keeps the threshold below the positive when a cosine is negative. Both
// given: both must hold. A candidate must pass the filter of every scorer used; the
// absolute margin is in each scorer's own units (BM25 points, cosine), so with both scorers
// the unit-free relative margin is the one to use.
//
// Picking: the candidates at ranks range.first .. range.last (1-based, of the final
// ranking) that pass the filter, in rank order; `Top` keeps the first K of them, `Random`
// K drawn uniformly from all of them (seeded per query, so the threads change nothing),
// written in rank order. A query with fewer than K writes no row.
#pragma once
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "data/pairs_reader.h"

namespace nce::pairs {

// Ranks first..last, 1-based: "10:100". Throws one line naming --range and the fix.
struct RankRange {
    int64_t first = 1;
    int64_t last = 100;
};
RankRange parse_rank_range(const std::string& text);

enum class NegativePick { Top, Random };

struct MiningSettings {
    RankRange range;
    int64_t negatives_per_query = 5;
    std::optional<double> absolute_margin;  // M >= 0
    std::optional<double> relative_margin;  // 0 <= R < 1
    NegativePick pick = NegativePick::Top;
    uint64_t seed = 13;                     // for NegativePick::Random
    int64_t rrf_k = 60;                     // the fusion's constant (Cormack et al. 2009)
};

// Throws one line naming the flag for K < 1, a negative margin or R >= 1.
void check_mining_settings(const MiningSettings& settings);

// The score a candidate must stay strictly below, given the positive's score; +infinity
// without a margin.
double margin_threshold(double positive_score, const MiningSettings& settings);

// One scorer's view of one query: a score per candidate, and its floor.
struct QueryScores {
    std::vector<double> scores;
    double floor = -std::numeric_limits<double>::infinity();  // at or below: not ranked
};

// The candidates ranked as above: best first, ties by lower index, none of `excluded`
// (sorted), none at or below the floor, at most `depth`.
std::vector<int64_t> rank_candidates(const QueryScores& scores, const std::vector<int64_t>& excluded, int64_t depth);

// Reciprocal rank fusion of rankings of the same candidates, at most `depth`.
std::vector<int64_t> reciprocal_rank_fusion(const std::vector<std::vector<int64_t>>& rankings, int64_t rrf_k,
                                            int64_t depth);

struct QueryNegatives {
    std::vector<int64_t> negatives;  // candidate indices in rank order, at most K
    int64_t removed_by_margin = 0;   // candidates in the range the filter removed (Top: until K were found)
};

// One query: `scorers` (one QueryScores per scorer used), its positives (candidate indices;
// their lowest score is the margin's reference) and the candidates it must never get
// (sorted). `query_index` seeds NegativePick::Random.
QueryNegatives mine_query(const std::vector<QueryScores>& scorers, const std::vector<int64_t>& positives,
                          const std::vector<int64_t>& excluded, const MiningSettings& settings, uint64_t query_index);

// ---- The pairs file as candidates and queries ----------------------------------------------

struct MiningQuery {
    std::string query_id;                // the file's query_id, "" without the column
    std::string anchor;
    std::vector<int64_t> positives;      // candidate indices, distinct, in file order
    std::vector<int64_t> excluded;       // sorted: the positives and every text equal to one, or to the anchor
};

struct MiningInput {
    std::vector<std::string> candidates;
    std::vector<MiningQuery> queries;
    bool has_query_id = false;
    int64_t file_candidates = 0;         // candidates from the pairs file; the rest came from the corpus
};

MiningInput mining_input(const data::PairsFile& file, const std::vector<std::string>& corpus);

// ---- Scorers and the whole file ------------------------------------------------------------

// Scores every candidate for a block of anchors.
class CandidateScorer {
public:
    virtual ~CandidateScorer() = default;
    virtual std::string name() const = 0;
    // scores[i] for anchors[i]: one score per candidate, with the scorer's floor.
    virtual std::vector<QueryScores> score(const std::vector<std::string>& anchors) const = 0;
};

struct MiningSummary {
    int64_t queries = 0;
    int64_t candidates = 0;
    int64_t queries_kept = 0;         // with K negatives
    int64_t rows_written = 0;         // one per (query, positive) of a kept query
    int64_t queries_dropped = 0;      // fewer than K negatives
    int64_t dropped_after_margin = 0; // of those, queries the margin removed candidates from (the
                                      // others' rankings were too short: too few candidates above the floor)
    int64_t rows_dropped = 0;
    int64_t removed_by_margin = 0;    // over all queries: likely false negatives left out
};

struct MiningResult {
    std::vector<QueryNegatives> negatives;  // per query of the input
    MiningSummary summary;
};

// Mines every query, `block` queries at a time (each scorer scores a block, then the block's
// queries are mined on the engine's threads; the result does not depend on either).
MiningResult mine_pairs(const MiningInput& input, const std::vector<const CandidateScorer*>& scorers,
                        const MiningSettings& settings, int64_t block = 256);

// The mined file as CSV (RFC 4180, every field quoted): [query_id,] anchor, positive,
// negative_1 .. negative_K; one row per positive of each query with K negatives.
std::string mined_pairs_csv(const MiningInput& input, const MiningResult& result, int64_t negatives_per_query);

}  // namespace nce::pairs
