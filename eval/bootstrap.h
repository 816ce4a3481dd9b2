// How sure a mean over queries is: a percentile bootstrap over queries, and a paired bootstrap
// test for two rankers scored on the same queries.
//
// Both take per-query values of one metric (eval/metrics.h per_query_retrieval_metrics:
// recall@k of each query, its reciprocal rank for MRR@10, its NDCG@10, ...), so the unit
// resampled is the query: the test set is one sample of the queries a ranker will meet, and
// that is the variation the interval describes (not the variation over training seeds).
//
// Resampling: replicate r (r = 0 .. R-1) draws n query indices uniformly with replacement,
// index i of replicate r being draw r·n + i of an engine Generator (engine/random.h) seeded
// with options.seed. A draw is a pure function of (seed, counter), so the replicates do not
// depend on the thread count or on which thread computes them, and two calls with the same
// seed and n resample the same queries: every metric and every ranker of a table sees the same
// replicates, which is what makes the paired test paired.
//
// Interval: the mean of each replicate, sorted; low and high are its (1 - c)/2 and (1 + c)/2
// quantiles (c = options.confidence, 0.95: the 2.5% and 97.5% percentiles), read by linear
// interpolation between order statistics (numpy's default "linear" method):
//   h = (R - 1) · p,  quantile = x[floor h] + (h - floor h) · (x[floor h + 1] - x[floor h])
// All values equal give low = mean = high exactly.
//
// Paired test of rankers A and B on the same n queries: d = mean(A) - mean(B) on the queries
// as they are; each replicate applies the same resampled indices to both, giving d_r. The
// two-sided p-value is twice the share of replicates whose difference does not keep d's sign,
//   p = min(1, 2 · #{r : d_r · sign(d) <= 0} / R)          (p = 1 when d = 0)
// (a replicate with d_r = 0 counts against the difference, so ties make p larger, never
// smaller). With R = 1000 the smallest p above 0 is 0.002; p = 0 means no replicate of 1000
// flipped the sign, i.e. p below about 1/1000. Significant at level alpha: p < alpha. No
// correction for testing several pairs is made.
#pragma once
#include <cstdint>
#include <vector>

namespace nce::eval {

struct BootstrapOptions {
    int64_t resamples = 1000;  // R, the number of replicates (>= 2)
    uint64_t seed = 0;         // the Generator's seed: the same seed gives the same numbers
    double confidence = 0.95;  // the interval's coverage c, in (0, 1)
};

struct ConfidenceInterval {
    double mean = 0;  // the mean over the queries as they are (summed in query order)
    double low = 0;   // the (1 - c)/2 quantile of the replicate means
    double high = 0;  // the (1 + c)/2 quantile
};

// The interval above for the mean of `per_query`. Throws when it is empty or an option is out
// of range.
ConfidenceInterval bootstrap_interval(const std::vector<double>& per_query, const BootstrapOptions& options = {});

struct PairedBootstrapTest {
    double difference = 0;  // mean(a) - mean(b)
    double low = 0;         // percentile interval of the difference, as for bootstrap_interval
    double high = 0;
    double p_value = 1;     // two-sided, as described above
    bool significant(double alpha = 0.05) const { return p_value < alpha; }
};

// The paired test above: a[q] and b[q] are the two rankers' values of one metric on query q.
// Throws when the sizes differ, there are no queries, or an option is out of range.
PairedBootstrapTest paired_bootstrap_test(const std::vector<double>& a, const std::vector<double>& b,
                                          const BootstrapOptions& options = {});

}  // namespace nce::eval
