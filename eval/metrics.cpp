#include "eval/metrics.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <unordered_set>

namespace nce::eval {
namespace {

void check_query_count(std::size_t rankings, std::size_t other, const char* function, const char* what) {
    NCE_CHECK(rankings == other, "{}: {} rankings but {} {}; give one per query", function, rankings, other, what);
}

// 1 / log2(position + 1) for a 1-based position: the DCG discount.
double discount(int64_t position) { return 1.0 / std::log2(static_cast<double>(position) + 1.0); }

MetricsAtK metrics_for_query(const std::vector<int64_t>& ranking, const std::unordered_set<int64_t>& relevant,
                             int64_t k) {
    MetricsAtK m;
    int64_t hits = 0;
    double dcg = 0, sum_of_precisions = 0;
    int64_t depth = std::min<int64_t>(k, static_cast<int64_t>(ranking.size()));
    for (int64_t i = 0; i < depth; ++i) {
        if (!relevant.contains(ranking[i])) continue;
        int64_t position = i + 1;
        ++hits;
        if (hits == 1) m.mrr = 1.0 / static_cast<double>(position);
        dcg += discount(position);
        sum_of_precisions += static_cast<double>(hits) / static_cast<double>(position);
    }
    int64_t relevant_count = static_cast<int64_t>(relevant.size());
    int64_t ideal_hits = std::min(k, relevant_count);
    double ideal_dcg = 0;
    for (int64_t position = 1; position <= ideal_hits; ++position) ideal_dcg += discount(position);

    m.accuracy = hits > 0 ? 1.0 : 0.0;
    m.precision = static_cast<double>(hits) / static_cast<double>(k);
    m.recall = static_cast<double>(hits) / static_cast<double>(relevant_count);
    m.ndcg = dcg / ideal_dcg;
    m.map = sum_of_precisions / static_cast<double>(ideal_hits);
    return m;
}

// Position (0-based) of each passage in the ranking; a passage listed twice keeps its first.
std::unordered_map<int64_t, std::size_t> positions_in(const std::vector<int64_t>& ranking) {
    std::unordered_map<int64_t, std::size_t> positions;
    for (std::size_t i = 0; i < ranking.size(); ++i) positions.emplace(ranking[i], i);
    return positions;
}

}  // namespace

std::map<int64_t, std::vector<MetricsAtK>> per_query_retrieval_metrics(const Rankings& rankings,
                                                                       const RelevantSets& relevant,
                                                                       const std::vector<int64_t>& ks) {
    check_query_count(rankings.size(), relevant.size(), "retrieval_metrics", "relevant sets");
    NCE_CHECK(!rankings.empty(), "retrieval_metrics: no queries; give at least one ranking");
    NCE_CHECK(!ks.empty(), "retrieval_metrics: no k given; pass e.g. {{1, 5, 10}}");
    for (int64_t k : ks) NCE_CHECK(k > 0, "retrieval_metrics: k must be positive, got {}", k);

    std::map<int64_t, std::vector<MetricsAtK>> per_query;
    for (int64_t k : ks) per_query[k].reserve(rankings.size());
    for (std::size_t q = 0; q < rankings.size(); ++q) {
        std::unordered_set<int64_t> relevant_set(relevant[q].begin(), relevant[q].end());
        NCE_CHECK(!relevant_set.empty(),
                  "retrieval_metrics: query {} has no relevant passage; drop it or add its relevant passages", q);
        for (auto& [k, values] : per_query) values.push_back(metrics_for_query(rankings[q], relevant_set, k));
    }
    return per_query;
}

MetricsAtK mean_metrics(const std::vector<MetricsAtK>& per_query) {
    NCE_CHECK(!per_query.empty(), "mean_metrics: no queries; give at least one query's metrics");
    MetricsAtK mean;
    for (const MetricsAtK& m : per_query) {
        mean.accuracy += m.accuracy;
        mean.precision += m.precision;
        mean.recall += m.recall;
        mean.mrr += m.mrr;
        mean.ndcg += m.ndcg;
        mean.map += m.map;
    }
    double query_count = static_cast<double>(per_query.size());
    mean.accuracy /= query_count;
    mean.precision /= query_count;
    mean.recall /= query_count;
    mean.mrr /= query_count;
    mean.ndcg /= query_count;
    mean.map /= query_count;
    return mean;
}

std::map<int64_t, MetricsAtK> retrieval_metrics(const Rankings& rankings, const RelevantSets& relevant,
                                                const std::vector<int64_t>& ks) {
    std::map<int64_t, MetricsAtK> means;
    for (const auto& [k, values] : per_query_retrieval_metrics(rankings, relevant, ks)) means[k] = mean_metrics(values);
    return means;
}

Rankings rankings_from_tensor(const Tensor& indices) {
    check_rank(indices, 2, "rankings_from_tensor", "indices");
    NCE_CHECK(indices.dtype() == Dtype::Int64, "rankings_from_tensor: indices must be int64 [Q, k], got {}",
              dtype_name(indices.dtype()));
    Tensor host = indices.to(Device::CPU);
    int64_t query_count = host.size(0), k = host.size(1);
    const int64_t* data = host.data<int64_t>();
    Rankings rankings(static_cast<std::size_t>(query_count));
    for (int64_t q = 0; q < query_count; ++q) rankings[q].assign(data + q * k, data + (q + 1) * k);
    return rankings;
}

double rank_at_k(const Rankings& rankings, const std::vector<int64_t>& targets, int64_t k) {
    check_query_count(rankings.size(), targets.size(), "rank_at_k", "targets");
    NCE_CHECK(!rankings.empty(), "rank_at_k: no queries; give at least one ranking");
    NCE_CHECK(k > 0, "rank_at_k: k must be positive, got {}", k);
    int64_t found = 0;
    for (std::size_t q = 0; q < rankings.size(); ++q) {
        auto end = rankings[q].begin() + std::min<std::ptrdiff_t>(k, static_cast<std::ptrdiff_t>(rankings[q].size()));
        if (std::find(rankings[q].begin(), end, targets[q]) != end) ++found;
    }
    return static_cast<double>(found) / static_cast<double>(rankings.size());
}

double hard_negative_accuracy(const Rankings& rankings, const std::vector<int64_t>& positives,
                              const RelevantSets& hard_negatives) {
    check_query_count(rankings.size(), positives.size(), "hard_negative_accuracy", "positives");
    check_query_count(rankings.size(), hard_negatives.size(), "hard_negative_accuracy", "hard-negative lists");
    NCE_CHECK(!rankings.empty(), "hard_negative_accuracy: no queries; give at least one ranking");
    int64_t correct = 0;
    for (std::size_t q = 0; q < rankings.size(); ++q) {
        auto positions = positions_in(rankings[q]);
        auto positive = positions.find(positives[q]);
        if (positive == positions.end()) continue;
        bool above_all = std::all_of(hard_negatives[q].begin(), hard_negatives[q].end(), [&](int64_t negative) {
            auto found = positions.find(negative);
            return found == positions.end() || found->second > positive->second;
        });
        if (above_all) ++correct;
    }
    return static_cast<double>(correct) / static_cast<double>(rankings.size());
}

}  // namespace nce::eval
