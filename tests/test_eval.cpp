// Retrieval evaluation: metrics against hand computations, exact top-k search against brute
// force (in memory and chunked from a .npy file on disk), BM25 against hand-computed scores,
// the bootstrap over queries on cases with a known answer.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numeric>
#include <random>
#include <unistd.h>

#include "eval/bm25.h"
#include "eval/bootstrap.h"
#include "eval/exact_search.h"
#include "eval/faiss_index.h"
#include "eval/hard_negative_mining.h"
#include "eval/metrics.h"
#include "tests/test_helpers.h"

using namespace nce;
using nce::testing::TemporaryDirectory;
using namespace nce::eval;

namespace {

constexpr double kExact = 1e-12;

double log2_of(double x) { return std::log2(x); }

// Rows of standard normal values, each scaled to unit length.
Tensor random_unit_rows(int64_t rows, int64_t columns, std::mt19937_64& rng, Dtype dtype) {
    std::normal_distribution<double> normal;
    std::vector<double> values(static_cast<std::size_t>(rows * columns));
    for (int64_t r = 0; r < rows; ++r) {
        double norm = 0;
        for (int64_t c = 0; c < columns; ++c) {
            double v = normal(rng);
            values[r * columns + c] = v;
            norm += v * v;
        }
        for (int64_t c = 0; c < columns; ++c) values[r * columns + c] /= std::sqrt(norm);
    }
    return Tensor::from_vector(values, {rows, columns}, dtype);
}

// Naive reference: every score by a plain dot-product loop, then a full sort by (score
// descending, index ascending), then the first k.
std::pair<std::vector<std::vector<int64_t>>, std::vector<std::vector<double>>> brute_force_top_k(
    const Tensor& queries, const Tensor& corpus, int64_t k) {
    int64_t query_count = queries.size(0), corpus_count = corpus.size(0), dim = queries.size(1);
    std::vector<std::vector<int64_t>> indices(query_count);
    std::vector<std::vector<double>> scores(query_count);
    for (int64_t q = 0; q < query_count; ++q) {
        std::vector<std::pair<double, int64_t>> all;
        for (int64_t p = 0; p < corpus_count; ++p) {
            double dot = 0;
            for (int64_t d = 0; d < dim; ++d) dot += queries.at(q * dim + d) * corpus.at(p * dim + d);
            all.push_back({dot, p});
        }
        std::sort(all.begin(), all.end(), [](auto a, auto b) { return a.first > b.first || (a.first == b.first && a.second < b.second); });
        for (int64_t i = 0; i < k; ++i) {
            indices[q].push_back(all[i].second);
            scores[q].push_back(all[i].first);
        }
    }
    return {indices, scores};
}

}  // namespace

// ---- metrics ----

// Three queries over five passages (rankings best first):
//   q0: ranking [3, 1, 4, 0, 2], relevant {1, 2}: hits at positions 2 and 5
//   q1: ranking [0, 2, 1, 3, 4], relevant {0}:    hit at position 1
//   q2: ranking [4, 3, 2, 1, 0], relevant {0}:    hit at position 5 only (none in the top 3)
// k = 1: only q1 hits, so every metric is (0 + 1 + 0) / 3 = 1/3.
// k = 3: q0 has 1 hit at 2, q1 1 hit at 1, q2 none.
//   accuracy  (1 + 1 + 0)/3 = 2/3          precision (1/3 + 1/3 + 0)/3 = 2/9
//   recall    (1/2 + 1 + 0)/3 = 1/2        MRR (1/2 + 1 + 0)/3 = 1/2
//   NDCG      q0: (1/log2 3) / (1 + 1/log2 3) (ideal: 2 relevant at 1, 2), q1: 1, q2: 0
//   MAP       q0: (1/2) / min(3, 2) = 1/4, q1: 1, q2: 0  ->  5/12
// k = 5: every query hits.
//   accuracy 1    precision (2/5 + 1/5 + 1/5)/3 = 4/15    recall 1
//   MRR (1/2 + 1 + 1/5)/3 = 17/30
//   NDCG q0: (1/log2 3 + 1/log2 6) / (1 + 1/log2 3), q1: 1, q2: 1/log2 6
//   MAP  q0: (1/2 + 2/5)/2 = 0.45, q1: 1, q2: (1/5)/1 = 0.2  ->  0.55
TEST_CASE("retrieval metrics: sentence-transformers definitions on hand-computed rankings") {
    Rankings rankings = {{3, 1, 4, 0, 2}, {0, 2, 1, 3, 4}, {4, 3, 2, 1, 0}};
    RelevantSets relevant = {{1, 2}, {0}, {0}};
    auto metrics = retrieval_metrics(rankings, relevant, {1, 3, 5});

    const MetricsAtK& at1 = metrics.at(1);
    for (double value : {at1.accuracy, at1.precision, at1.recall, at1.mrr, at1.ndcg, at1.map})
        CHECK(value == doctest::Approx(1.0 / 3).epsilon(kExact));

    const MetricsAtK& at3 = metrics.at(3);
    CHECK(at3.accuracy == doctest::Approx(2.0 / 3).epsilon(kExact));
    CHECK(at3.precision == doctest::Approx(2.0 / 9).epsilon(kExact));
    CHECK(at3.recall == doctest::Approx(0.5).epsilon(kExact));
    CHECK(at3.mrr == doctest::Approx(0.5).epsilon(kExact));
    double q0_ndcg3 = (1 / log2_of(3)) / (1 + 1 / log2_of(3));
    CHECK(at3.ndcg == doctest::Approx((q0_ndcg3 + 1 + 0) / 3).epsilon(kExact));
    CHECK(at3.map == doctest::Approx(5.0 / 12).epsilon(kExact));

    const MetricsAtK& at5 = metrics.at(5);
    CHECK(at5.accuracy == doctest::Approx(1.0).epsilon(kExact));
    CHECK(at5.precision == doctest::Approx(4.0 / 15).epsilon(kExact));
    CHECK(at5.recall == doctest::Approx(1.0).epsilon(kExact));
    CHECK(at5.mrr == doctest::Approx(17.0 / 30).epsilon(kExact));
    double q0_ndcg5 = (1 / log2_of(3) + 1 / log2_of(6)) / (1 + 1 / log2_of(3));
    CHECK(at5.ndcg == doctest::Approx((q0_ndcg5 + 1 + 1 / log2_of(6)) / 3).epsilon(kExact));
    CHECK(at5.map == doctest::Approx(0.55).epsilon(kExact));
}

// One query, three relevant passages {7, 8, 9}, ranking [7, 8, 1, 9], k = 2:
//   ideal DCG and MAP's denominator use min(k, |R|) = 2, so two hits in two places are perfect:
//   NDCG = 1, MAP = (1/1 + 2/2) / 2 = 1, but recall = 2/3 and precision = 1.
// k = 4: hits at 1, 2, 4.  MAP = (1 + 1 + 3/4) / 3 = 11/12,
//   NDCG = (1 + 1/log2 3 + 1/log2 5) / (1 + 1/log2 3 + 1/log2 4).
TEST_CASE("retrieval metrics: the ideal is capped at k when there are more relevant passages than k") {
    auto metrics = retrieval_metrics({{7, 8, 1, 9}}, {{9, 8, 7}}, {2, 4});
    CHECK(metrics.at(2).ndcg == doctest::Approx(1.0).epsilon(kExact));
    CHECK(metrics.at(2).map == doctest::Approx(1.0).epsilon(kExact));
    CHECK(metrics.at(2).recall == doctest::Approx(2.0 / 3).epsilon(kExact));
    CHECK(metrics.at(2).precision == doctest::Approx(1.0).epsilon(kExact));
    CHECK(metrics.at(4).map == doctest::Approx(11.0 / 12).epsilon(kExact));
    CHECK(metrics.at(4).ndcg ==
          doctest::Approx((1 + 1 / log2_of(3) + 1 / log2_of(5)) / (1 + 1 / log2_of(3) + 1 / log2_of(4))).epsilon(kExact));
}

// Rankings [2, 0, 1], [1, 2, 0], [0, 1, 2] with targets 0, 0, 0: the target is at ranks 2, 3, 1.
// Rank@1 = 1/3, Rank@2 = 2/3, Rank@3 = 1.
// Hard negatives: q0 positive 0 vs {2} -> 2 is above it: miss. q1 positive 0 vs {1, 5} -> 1 is
// above: miss; q2 positive 0 vs {1, 5}: 1 below, 5 absent (below everything): hit.  -> 1/3.
TEST_CASE("Rank@k and hard-negative accuracy") {
    Rankings rankings = {{2, 0, 1}, {1, 2, 0}, {0, 1, 2}};
    CHECK(rank_at_k(rankings, {0, 0, 0}, 1) == doctest::Approx(1.0 / 3));
    CHECK(rank_at_k(rankings, {0, 0, 0}, 2) == doctest::Approx(2.0 / 3));
    CHECK(rank_at_k(rankings, {0, 0, 0}, 3) == doctest::Approx(1.0));
    CHECK(hard_negative_accuracy(rankings, {0, 0, 0}, {{2}, {1, 5}, {1, 5}}) == doctest::Approx(1.0 / 3));
    // A positive missing from the ranking is a miss.
    CHECK(hard_negative_accuracy({{1, 2}}, {0}, {{3}}) == 0.0);
}

TEST_CASE("retrieval metrics: bad input is a one-line error") {
    CHECK_ERROR_MENTIONS(retrieval_metrics({{0, 1}}, {{}}, {1}), "query 0 has no relevant passage");
    CHECK_ERROR_MENTIONS(retrieval_metrics({{0, 1}}, {{0}, {1}}, {1}), "1 rankings but 2 relevant sets");
    CHECK_ERROR_MENTIONS(retrieval_metrics({{0, 1}}, {{0}}, {0}), "k must be positive");
    CHECK_ERROR_MENTIONS(rank_at_k({{0}}, {0}, -1), "k must be positive");
}

TEST_CASE("per-query metrics: their means are retrieval_metrics to the last bit") {
    Rankings rankings = {{3, 1, 4, 0, 2}, {0, 2, 1, 3, 4}, {4, 3, 2, 1, 0}};
    RelevantSets relevant = {{1, 2}, {0}, {0}};
    auto per_query = per_query_retrieval_metrics(rankings, relevant, {1, 5});
    auto means = retrieval_metrics(rankings, relevant, {1, 5});
    REQUIRE(per_query.at(5).size() == 3);
    CHECK(per_query.at(5)[0].mrr == doctest::Approx(0.5).epsilon(kExact));  // q0: first relevant at rank 2
    CHECK(per_query.at(5)[2].mrr == doctest::Approx(0.2).epsilon(kExact));  // q2: at rank 5
    CHECK(per_query.at(1)[1].accuracy == 1.0);
    for (int64_t k : {1, 5}) {
        MetricsAtK mean = mean_metrics(per_query.at(k));
        CHECK(mean.mrr == means.at(k).mrr);
        CHECK(mean.ndcg == means.at(k).ndcg);
        CHECK(mean.recall == means.at(k).recall);
        CHECK(mean.map == means.at(k).map);
    }
    CHECK_ERROR_MENTIONS(mean_metrics({}), "no queries");
}

// ---- bootstrap over queries ----

namespace {

// n values, the first round(share · n) of them 1 and the rest 0: a share known exactly.
std::vector<double> zeros_and_ones(int64_t n, double share) {
    std::vector<double> values(static_cast<size_t>(n), 0.0);
    std::fill(values.begin(), values.begin() + std::llround(share * static_cast<double>(n)), 1.0);
    return values;
}

}  // namespace

TEST_CASE("bootstrap interval: equal values give a zero-width interval at their value") {
    for (int64_t n : {1, 7, 300}) {
        ConfidenceInterval interval = bootstrap_interval(std::vector<double>(static_cast<size_t>(n), 0.3));
        CHECK(interval.low == interval.mean);
        CHECK(interval.high == interval.mean);
        CHECK(interval.mean == doctest::Approx(0.3).epsilon(kExact));
    }
}

// For a share p of ones among n queries the replicate means are Binomial(n, p) / n, so the 95%
// interval is about p ± 1.96 · sqrt(p (1 - p) / n): it holds p, and four times the queries
// halve it.
TEST_CASE("bootstrap interval: 0/1 values of a known share hold it, and shrink as 1/sqrt(n)") {
    const double share = 0.3;
    double previous_width = 0;
    for (int64_t n : {100, 400, 1600}) {
        ConfidenceInterval interval = bootstrap_interval(zeros_and_ones(n, share), {1000, 11, 0.95});
        CHECK(interval.mean == doctest::Approx(share).epsilon(kExact));
        CHECK(interval.low < share);
        CHECK(interval.high > share);
        double width = interval.high - interval.low;
        double normal_width = 2 * 1.96 * std::sqrt(share * (1 - share) / static_cast<double>(n));
        CHECK(width == doctest::Approx(normal_width).epsilon(0.15));
        if (previous_width > 0) CHECK(previous_width / width == doctest::Approx(2.0).epsilon(0.2));
        previous_width = width;
    }
    // Two queries {0, 1}: replicate means 0, 1/2, 1 with chances 1/4, 1/2, 1/4, so the 2.5% and
    // 97.5% percentiles of 1000 replicates are the extremes.
    ConfidenceInterval two = bootstrap_interval({0.0, 1.0});
    CHECK(two.mean == 0.5);
    CHECK(two.low == 0.0);
    CHECK(two.high == 1.0);
    // A wider confidence gives a wider interval from the same replicates.
    ConfidenceInterval at90 = bootstrap_interval(zeros_and_ones(200, share), {1000, 3, 0.90});
    ConfidenceInterval at99 = bootstrap_interval(zeros_and_ones(200, share), {1000, 3, 0.99});
    CHECK(at99.low <= at90.low);
    CHECK(at99.high >= at90.high);
    CHECK(at99.high - at99.low > at90.high - at90.low);
}

TEST_CASE("bootstrap: the same seed gives the same numbers on any thread count; another seed others") {
    std::vector<double> values;
    for (int i = 0; i < 257; ++i) values.push_back(std::fmod(i * 0.618033988749895, 1.0));
    std::vector<double> other = values;
    std::reverse(other.begin(), other.end());
    int threads = num_threads();
    set_num_threads(1);
    ConfidenceInterval one_thread = bootstrap_interval(values, {1000, 42, 0.95});
    PairedBootstrapTest paired_one = paired_bootstrap_test(values, other, {1000, 42, 0.95});
    set_num_threads(4);
    ConfidenceInterval four_threads = bootstrap_interval(values, {1000, 42, 0.95});
    PairedBootstrapTest paired_four = paired_bootstrap_test(values, other, {1000, 42, 0.95});
    set_num_threads(threads);
    CHECK(one_thread.low == four_threads.low);
    CHECK(one_thread.high == four_threads.high);
    CHECK(paired_one.p_value == paired_four.p_value);
    CHECK(paired_one.low == paired_four.low);
    ConfidenceInterval again = bootstrap_interval(values, {1000, 42, 0.95});
    CHECK(again.low == one_thread.low);
    CHECK(again.high == one_thread.high);
    ConfidenceInterval reseeded = bootstrap_interval(values, {1000, 43, 0.95});
    CHECK((reseeded.low != one_thread.low || reseeded.high != one_thread.high));
}

TEST_CASE("paired bootstrap test: a clear difference is significant, identical rankers are not") {
    // 200 queries: A finds 80% of them, B 40% (B's hits are a subset of A's).
    std::vector<double> a = zeros_and_ones(200, 0.8), b = zeros_and_ones(200, 0.4);
    PairedBootstrapTest clear = paired_bootstrap_test(a, b);
    CHECK(clear.difference == doctest::Approx(0.4).epsilon(kExact));
    CHECK(clear.p_value < 0.05);
    CHECK(clear.significant());
    CHECK(clear.low > 0);
    CHECK(clear.high >= clear.difference);
    // The sign does not matter: B against A is as significant.
    PairedBootstrapTest reversed = paired_bootstrap_test(b, a);
    CHECK(reversed.difference == doctest::Approx(-0.4).epsilon(kExact));
    CHECK(reversed.p_value == clear.p_value);

    PairedBootstrapTest identical = paired_bootstrap_test(a, a);
    CHECK(identical.difference == 0.0);
    CHECK(identical.p_value == 1.0);
    CHECK_FALSE(identical.significant());
    CHECK(identical.low == 0.0);
    CHECK(identical.high == 0.0);

    // Pairing matters: B is A less 0.01 on every query, while the queries themselves range over
    // 0..1. Resampled together the difference is 0.01 in every replicate; resampled apart it
    // would drown in the spread of the queries (about ±0.04 at 95%).
    std::vector<double> spread, shifted;
    for (int q = 0; q < 200; ++q) {
        spread.push_back(0.01 + 0.99 * std::fmod(q * 0.618033988749895, 1.0));
        shifted.push_back(spread.back() - 0.01);
    }
    PairedBootstrapTest consistent = paired_bootstrap_test(spread, shifted);
    CHECK(consistent.difference == doctest::Approx(0.01).epsilon(1e-9));
    CHECK(consistent.p_value == 0.0);
    CHECK(consistent.low == doctest::Approx(0.01).epsilon(1e-9));
    CHECK(consistent.high == doctest::Approx(0.01).epsilon(1e-9));

    // One query of 200 apart: the difference survives a replicate only when that query is drawn,
    // which misses it with chance (1 - 1/200)^200 ≈ 0.37, so p ≈ 2 · 0.37.
    std::vector<double> one_apart = b;
    one_apart[199] = 1.0;
    PairedBootstrapTest tiny = paired_bootstrap_test(one_apart, b);
    CHECK_FALSE(tiny.significant());
    CHECK(tiny.p_value == doctest::Approx(2 * std::pow(1 - 1.0 / 200, 200)).epsilon(0.15));
}

TEST_CASE("bootstrap: bad input is a one-line error") {
    CHECK_ERROR_MENTIONS(bootstrap_interval({}), "no queries");
    CHECK_ERROR_MENTIONS(bootstrap_interval({1.0}, {1, 0, 0.95}), "resamples must be at least 2");
    CHECK_ERROR_MENTIONS(bootstrap_interval({1.0}, {1000, 0, 1.0}), "confidence must lie in (0, 1)");
    CHECK_ERROR_MENTIONS(paired_bootstrap_test({1.0, 0.0}, {1.0}), "score both on the same queries");
    CHECK_ERROR_MENTIONS(paired_bootstrap_test({}, {}), "no queries");
}

// ---- exact search ----

TEST_CASE("exact search equals brute force, for chunk and block sizes that do not divide the sizes") {
    std::mt19937_64 rng(7);
    for (Dtype dtype : testing::kFloatDtypes) {
        Tensor corpus = random_unit_rows(23, 6, rng, dtype), queries = random_unit_rows(9, 6, rng, dtype);
        auto [expected_indices, expected_scores] = brute_force_top_k(queries, corpus, 5);
        for (auto [chunk, block] : {std::pair<int64_t, int64_t>{5, 2}, {7, 4}, {23, 9}, {100, 100}, {1, 1}}) {
            TopK top = exact_search(queries, corpus, 5, {.corpus_chunk_rows = chunk, .query_block_rows = block});
            REQUIRE(top.indices.shape() == Shape{9, 5});
            CHECK(top.scores.dtype() == dtype);
            for (int64_t q = 0; q < 9; ++q)
                for (int64_t i = 0; i < 5; ++i) {
                    CHECK(top.indices.at(q * 5 + i) == expected_indices[q][i]);
                    CHECK(top.scores.at(q * 5 + i) == doctest::Approx(expected_scores[q][i]).epsilon(testing::tolerance_for(dtype)));
                }
        }
    }
}

// Corpus rows 0..6 in 2-D: rows 1, 3 and 5 are the same vector (1, 0), row 6 is (0, 1), the
// rest (0.5, 0). For the query (1, 0) the scores are 0.5, 1, 0.5, 1, 0.5, 1, 0: three ties at 1
// and three at 0.5, broken by lower index whatever the chunking: top 5 = [1, 3, 5, 0, 2].
TEST_CASE("exact search breaks ties by lower index, across chunk borders") {
    Tensor corpus = Tensor::from_vector({0.5, 0, 1, 0, 0.5, 0, 1, 0, 0.5, 0, 1, 0, 0, 1}, {7, 2}, Dtype::Float64);
    Tensor query = Tensor::from_vector({1, 0}, {1, 2}, Dtype::Float64);
    for (int64_t chunk : {1, 2, 3, 4, 7}) {
        TopK top = exact_search(query, corpus, 5, {.corpus_chunk_rows = chunk, .query_block_rows = 1});
        CHECK(top.indices.to_indices() == std::vector<int64_t>{1, 3, 5, 0, 2});
        CHECK(top.scores.to_vector() == std::vector<double>{1, 1, 1, 0.5, 0.5});
    }
    // The metrics read this order: relevant {5}, k = 3 -> found at position 3, MRR@3 = 1/3.
    auto metrics = retrieval_metrics(rankings_from_tensor(exact_search(query, corpus, 3).indices), {{5}}, {3});
    CHECK(metrics.at(3).mrr == doctest::Approx(1.0 / 3));
}

TEST_CASE("exact search from a .npy file read in chunks equals the in-memory search") {
    std::mt19937_64 rng(11);
    TemporaryDirectory directory;
    for (Dtype dtype : testing::kFloatDtypes) {
        Tensor corpus = random_unit_rows(50, 8, rng, dtype), queries = random_unit_rows(6, 8, rng, dtype);
        std::string path = directory.file(fmt::format("corpus_{}.npy", dtype_name(dtype)));
        write_npy(path, corpus);
        TopK in_memory = exact_search(queries, corpus, 7);
        for (int64_t chunk : {1, 7, 16, 50, 64}) {
            TopK from_disk = exact_search_npy(queries, path, 7, {.corpus_chunk_rows = chunk, .query_block_rows = 4});
            CHECK(from_disk.indices.to_indices() == in_memory.indices.to_indices());
            CHECK(max_abs_difference(from_disk.scores, in_memory.scores) <= testing::tolerance_for(dtype));
        }
    }
}

TEST_CASE("exact search: bad input is a one-line error") {
    Tensor corpus = Tensor::zeros({4, 3}, Dtype::Float32), queries = Tensor::zeros({2, 3}, Dtype::Float32);
    CHECK_ERROR_MENTIONS(exact_search(queries, corpus, 5), "k = 5 must be between 1 and the corpus size 4");
    CHECK_ERROR_MENTIONS(exact_search(Tensor::zeros({2, 5}, Dtype::Float32), corpus, 2), "expected [4, 5]");
    CHECK_ERROR_MENTIONS(exact_search(queries.to(Dtype::Float64), corpus, 2), "the corpus is float32 but the queries are float64");
    CHECK_ERROR_MENTIONS(exact_search_npy(queries, "/nonexistent/corpus.npy", 2), "/nonexistent/corpus.npy");
    TemporaryDirectory directory;
    write_npy(directory.file("ids.npy"), Tensor::zeros({3, 2}, Dtype::Int64));
    CHECK_ERROR_MENTIONS(exact_search_npy(queries, directory.file("ids.npy"), 2), "holds int64");
}

// ---- BM25 ----

// Documents d0 = [1, 2], d1 = [1, 1, 3, 4], d2 = [2, 5, 6]: N = 3, lengths 2, 4, 3, avgdl = 3.
// k1 = 1.2, b = 0.75. Length factor k1 (1 - b + b |d| / avgdl):
//   d0: 1.2 (0.25 + 0.5) = 0.9     d1: 1.2 (0.25 + 1) = 1.5     d2: 1.2 (0.25 + 0.75) = 1.2
// df(1) = df(2) = 2: idf = ln(1 + 1.5/2.5) = ln 1.6;   df(3) = 1: idf = ln(1 + 2.5/1.5) = ln(8/3)
// Query [1, 3]:
//   d0 = ln1.6 · 1·2.2/(1 + 0.9)
//   d1 = ln1.6 · 2·2.2/(2 + 1.5) + ln(8/3) · 1·2.2/(1 + 1.5)
//   d2 = 0                                  -> ranking [1, 0, 2]
// Query [2]: d0 = ln1.6 · 2.2/1.9, d2 = ln1.6 · 2.2/2.2, d1 = 0   -> ranking [0, 2, 1]
// Query [7] (no document holds it): all 0, a three-way tie -> ranking by index [0, 1, 2]
TEST_CASE("BM25: scores equal hand-computed values on a three-document corpus") {
    Bm25Index index({{1, 2}, {1, 1, 3, 4}, {2, 5, 6}});
    double idf_common = std::log(1.6), idf_rare = std::log(8.0 / 3);
    std::vector<double> scores = index.scores({1, 3});
    REQUIRE(scores.size() == 3);
    CHECK(scores[0] == doctest::Approx(idf_common * 2.2 / 1.9).epsilon(kExact));
    CHECK(scores[1] == doctest::Approx(idf_common * 4.4 / 3.5 + idf_rare * 2.2 / 2.5).epsilon(kExact));
    CHECK(scores[2] == 0.0);

    TopK top = index.search({{1, 3}, {2}, {7}}, 3);
    CHECK(top.indices.to_indices() == std::vector<int64_t>{1, 0, 2, 0, 2, 1, 0, 1, 2});
    CHECK(top.scores.at(3) == doctest::Approx(idf_common * 2.2 / 1.9).epsilon(kExact));
    CHECK(top.scores.at(4) == doctest::Approx(idf_common).epsilon(kExact));
    CHECK(top.scores.at(6) == 0.0);
}

TEST_CASE("BM25: bad input is a one-line error") {
    CHECK_ERROR_MENTIONS(Bm25Index(std::vector<std::vector<int64_t>>{}), "the corpus is empty");
    CHECK_ERROR_MENTIONS(Bm25Index(std::vector<std::vector<int64_t>>{{1}}, {.k1 = 1.2, .b = 2}), "b = 2");
    Bm25Index two_documents(std::vector<std::vector<int64_t>>{{1}, {2}});
    CHECK_ERROR_MENTIONS(two_documents.search({{1}}, 3), "k = 3 must be between 1 and the corpus size 2");
}

// ---- FAISS index ----

TEST_CASE("FAISS flat index: build, save, load, and the same results as exact search") {
    std::mt19937_64 rng(3);
    Tensor corpus = random_unit_rows(40, 16, rng, Dtype::Float32), queries = random_unit_rows(8, 16, rng, Dtype::Float32);
    TopK exact = exact_search(queries, corpus, 6);
    TemporaryDirectory directory;
    std::string path = directory.file("flat.faiss");
    FaissIndex::build(corpus).save(path);
    CHECK(!std::filesystem::exists(path + fmt::format(".tmp-{}", ::getpid())));  // no temporary left behind
    FaissIndex loaded = FaissIndex::load(path);
    CHECK(loaded.size() == 40);
    CHECK(loaded.dimension() == 16);
    TopK found = loaded.search(queries, 6);
    CHECK(found.indices.to_indices() == exact.indices.to_indices());
    CHECK(max_abs_difference(found.scores, exact.scores) < 1e-5);

    // With ids: the same hits, reported as ids (here 1000 + row).
    std::vector<int64_t> ids(40);
    std::iota(ids.begin(), ids.end(), 1000);
    FaissIndex::build(corpus, Tensor::from_indices(ids, {40})).save(path);  // replaces the file
    std::vector<int64_t> expected = exact.indices.to_indices();
    for (int64_t& index : expected) index += 1000;
    CHECK(FaissIndex::load(path).search(queries, 6).indices.to_indices() == expected);
}

TEST_CASE("FAISS HNSW index: recall near 1 on a small random set, also after a round trip") {
    std::mt19937_64 rng(5);
    Tensor corpus = random_unit_rows(500, 16, rng, Dtype::Float32), queries = random_unit_rows(50, 16, rng, Dtype::Float32);
    int64_t k = 10;
    std::vector<int64_t> exact = exact_search(queries, corpus, k).indices.to_indices();
    auto recall_of = [&](const FaissIndex& index) {
        std::vector<int64_t> found = index.search(queries, k).indices.to_indices();
        int64_t hits = 0;
        for (int64_t q = 0; q < 50; ++q)
            for (int64_t i = 0; i < k; ++i)
                hits += std::count(exact.begin() + q * k, exact.begin() + (q + 1) * k, found[q * k + i]);
        return static_cast<double>(hits) / static_cast<double>(50 * k);
    };
    FaissIndex hnsw = FaissIndex::build(corpus, {.kind = FaissIndexKind::Hnsw, .hnsw_links = 16, .hnsw_ef_search = 128});
    CHECK(recall_of(hnsw) >= 0.95);
    TemporaryDirectory directory;
    hnsw.save(directory.file("hnsw.faiss"));
    FaissIndex loaded = FaissIndex::load(directory.file("hnsw.faiss"));
    loaded.set_ef_search(128);
    CHECK(recall_of(loaded) >= 0.95);
}

TEST_CASE("FAISS index: missing and corrupt files and mismatched queries are one-line errors") {
    TemporaryDirectory directory;
    CHECK_ERROR_MENTIONS(FaissIndex::load(directory.file("missing.faiss")), "missing.faiss' does not exist");
    {
        std::FILE* file = std::fopen(directory.file("corrupt.faiss").c_str(), "wb");
        std::fputs("not an index at all", file);
        std::fclose(file);
    }
    CHECK_ERROR_MENTIONS(FaissIndex::load(directory.file("corrupt.faiss")), "corrupt.faiss' is not a readable FAISS index");
    Tensor corpus = Tensor::zeros({4, 3}, Dtype::Float32);
    FaissIndex index = FaissIndex::build(corpus);
    CHECK_ERROR_MENTIONS(index.search(Tensor::zeros({1, 5}, Dtype::Float32), 1), "dimension 5 but the index holds dimension 3");
    CHECK_ERROR_MENTIONS(index.search(Tensor::zeros({1, 3}, Dtype::Float64), 1), "must be float32");
    CHECK_ERROR_MENTIONS(index.search(Tensor::zeros({1, 3}, Dtype::Float32), 9), "k = 9");
    CHECK_ERROR_MENTIONS(index.set_ef_search(10), "flat index");
    CHECK_ERROR_MENTIONS(index.save(directory.file("no/such/dir/x.faiss")), "x.faiss");
}

// ---- hard-negative mining ----

// Corpus rows (s, 0) with s = 0.9, 0.8, 0.7, 0.6, 0.5, 0.4 (rows 0..5).
// Query 0 = (1, 0) ranks rows 0, 1, 2, 3, 4, 5; positives {0, 2} -> negatives [1, 3, 4].
// Query 1 = (-1, 0) ranks rows 5, 4, 3, 2, 1, 0; positives {5}   -> negatives [4, 3, 2].
TEST_CASE("hard-negative mining: the top non-positives, positives excluded") {
    Tensor corpus = Tensor::from_vector({0.9, 0, 0.8, 0, 0.7, 0, 0.6, 0, 0.5, 0, 0.4, 0}, {6, 2}, Dtype::Float32);
    Tensor queries = Tensor::from_vector({1, 0, -1, 0}, {2, 2}, Dtype::Float32);
    RelevantSets positives = {{0, 2}, {5}};
    Tensor mined = mine_hard_negatives(queries, corpus, positives, 3);
    CHECK(mined.shape() == Shape{2, 3});
    CHECK(mined.to_indices() == std::vector<int64_t>{1, 3, 4, 4, 3, 2});
    CHECK(mine_hard_negatives(FaissIndex::build(corpus), queries, positives, 3).to_indices() == mined.to_indices());

    // The flattened matrix for a loss's `negatives`: rows 1, 3, 4, 4, 3, 2 of the corpus.
    Tensor negatives = hard_negative_embeddings(corpus, mined);
    REQUIRE(negatives.shape() == Shape{6, 2});
    std::vector<int64_t> rows = {1, 3, 4, 4, 3, 2};
    for (int64_t i = 0; i < 6; ++i) {
        CHECK(negatives.at(2 * i) == corpus.at(2 * rows[i]));
        CHECK(negatives.at(2 * i + 1) == corpus.at(2 * rows[i] + 1));
    }

    // Six passages, positives {0, 2}: only four negatives exist.
    CHECK_ERROR_MENTIONS(mine_hard_negatives(queries, corpus, positives, 5), "query 0 has only 4 non-positive passages");
    CHECK_ERROR_MENTIONS(mine_hard_negatives(queries, corpus, {{0}}, 2), "2 queries but 1 positive sets");
    CHECK_ERROR_MENTIONS(hard_negative_embeddings(corpus, Tensor::from_indices({6}, {1, 1})), "passage index 6");
}

TEST_CASE("hard-negative mining on random data equals the first non-positives of a brute-force ranking") {
    std::mt19937_64 rng(13);
    Tensor corpus = random_unit_rows(30, 5, rng, Dtype::Float64), queries = random_unit_rows(7, 5, rng, Dtype::Float64);
    auto [ranking, scores] = brute_force_top_k(queries, corpus, 30);
    RelevantSets positives(7);
    for (int64_t q = 0; q < 7; ++q) positives[q] = {ranking[q][0], ranking[q][q % 3 + 1], (q * 5) % 30};
    Tensor mined = mine_hard_negatives(queries, corpus, positives, 4, {.corpus_chunk_rows = 8, .query_block_rows = 3});
    for (int64_t q = 0; q < 7; ++q) {
        std::vector<int64_t> expected;
        for (int64_t passage : ranking[q])
            if (expected.size() < 4 && std::find(positives[q].begin(), positives[q].end(), passage) == positives[q].end())
                expected.push_back(passage);
        for (int64_t i = 0; i < 4; ++i) CHECK(mined.at(q * 4 + i) == expected[i]);
    }
}
