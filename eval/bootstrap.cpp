// The percentile bootstrap over queries and the paired bootstrap test (see bootstrap.h).
#include "eval/bootstrap.h"

#include <algorithm>
#include <cmath>
#include <tuple>
#include <utility>

#include "engine/error.h"
#include "engine/random.h"
#include "engine/threads.h"

namespace nce::eval {
namespace {

void check_options(const BootstrapOptions& options, const char* function) {
    NCE_CHECK(options.resamples >= 2, "{}: resamples must be at least 2, got {}", function, options.resamples);
    NCE_CHECK(options.confidence > 0 && options.confidence < 1, "{}: confidence must lie in (0, 1), got {}", function,
              options.confidence);
}

// Summed in index order, as eval/metrics.h mean_metrics sums, so the mean of the queries as
// they are equals the metric table's value to the last bit.
double mean_of(const std::vector<double>& values) {
    double sum = 0;
    for (double value : values) sum += value;
    return sum / static_cast<double>(values.size());
}

// means[s][r]: the mean of series s over replicate r's resampled queries. Every series is
// indexed with the same draws; replicate r uses the Generator's draws r·n .. r·n + n - 1, so
// the split of replicates over threads changes nothing.
std::vector<std::vector<double>> replicate_means(const std::vector<const std::vector<double>*>& series,
                                                 const BootstrapOptions& options) {
    const int64_t query_count = static_cast<int64_t>(series.front()->size());
    std::vector<std::vector<double>> means(series.size(), std::vector<double>(static_cast<size_t>(options.resamples)));
    parallel_for(options.resamples, 8, [&](int64_t first, int64_t last) {
        std::vector<double> sums(series.size());
        for (int64_t r = first; r < last; ++r) {
            Generator generator(options.seed);
            generator.set_offset(static_cast<uint64_t>(r) * static_cast<uint64_t>(query_count));
            std::fill(sums.begin(), sums.end(), 0.0);
            for (int64_t i = 0; i < query_count; ++i) {
                size_t query = static_cast<size_t>(generator.next_index(query_count));
                for (size_t s = 0; s < series.size(); ++s) sums[s] += (*series[s])[query];
            }
            for (size_t s = 0; s < series.size(); ++s)
                means[s][static_cast<size_t>(r)] = sums[s] / static_cast<double>(query_count);
        }
    });
    return means;
}

// The p-quantile of sorted values by linear interpolation between order statistics.
double quantile_of_sorted(const std::vector<double>& sorted, double p) {
    double h = static_cast<double>(sorted.size() - 1) * p;
    size_t below = static_cast<size_t>(std::floor(h));
    if (below + 1 >= sorted.size()) return sorted.back();
    return sorted[below] + (h - static_cast<double>(below)) * (sorted[below + 1] - sorted[below]);
}

// (low, high) of the replicates' values at the options' confidence; sorts `values`.
std::pair<double, double> percentile_interval(std::vector<double>& values, const BootstrapOptions& options) {
    std::sort(values.begin(), values.end());
    double tail = (1 - options.confidence) / 2;
    return {quantile_of_sorted(values, tail), quantile_of_sorted(values, 1 - tail)};
}

}  // namespace

ConfidenceInterval bootstrap_interval(const std::vector<double>& per_query, const BootstrapOptions& options) {
    check_options(options, "bootstrap_interval");
    NCE_CHECK(!per_query.empty(), "bootstrap_interval: no queries; give at least one per-query value");
    std::vector<double> means = std::move(replicate_means({&per_query}, options).front());
    auto [low, high] = percentile_interval(means, options);
    return {mean_of(per_query), low, high};
}

PairedBootstrapTest paired_bootstrap_test(const std::vector<double>& a, const std::vector<double>& b,
                                          const BootstrapOptions& options) {
    check_options(options, "paired_bootstrap_test");
    NCE_CHECK(a.size() == b.size(), "paired_bootstrap_test: {} values for the first ranker but {} for the second; "
              "score both on the same queries", a.size(), b.size());
    NCE_CHECK(!a.empty(), "paired_bootstrap_test: no queries; give at least one per-query value");
    std::vector<std::vector<double>> means = replicate_means({&a, &b}, options);
    std::vector<double> differences(means[0].size());
    for (size_t r = 0; r < differences.size(); ++r) differences[r] = means[0][r] - means[1][r];

    PairedBootstrapTest test;
    test.difference = mean_of(a) - mean_of(b);
    if (test.difference != 0) {
        double sign = test.difference > 0 ? 1.0 : -1.0;
        int64_t flipped = std::count_if(differences.begin(), differences.end(),
                                        [sign](double d) { return d * sign <= 0; });
        test.p_value = std::min(1.0, 2.0 * static_cast<double>(flipped) / static_cast<double>(options.resamples));
    }
    std::tie(test.low, test.high) = percentile_interval(differences, options);
    return test;
}

}  // namespace nce::eval
