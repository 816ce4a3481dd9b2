#include "eval/bm25.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace nce::eval {

Bm25Index::Bm25Index(const std::vector<std::vector<int64_t>>& documents, Bm25Parameters parameters)
    : parameters_(parameters) {
    NCE_CHECK(!documents.empty(), "Bm25Index: the corpus is empty; give at least one document");
    NCE_CHECK(parameters.k1 >= 0 && parameters.b >= 0 && parameters.b <= 1,
              "Bm25Index: k1 = {} must be >= 0 and b = {} in [0, 1]", parameters.k1, parameters.b);
    int64_t total_length = 0;
    for (std::size_t d = 0; d < documents.size(); ++d) {
        std::unordered_map<int64_t, int64_t> term_frequencies;
        for (int64_t token : documents[d]) ++term_frequencies[token];
        for (auto [token, frequency] : term_frequencies)
            postings_[token].push_back({static_cast<int64_t>(d), frequency});
        document_lengths_.push_back(static_cast<int64_t>(documents[d].size()));
        total_length += static_cast<int64_t>(documents[d].size());
    }
    average_length_ = static_cast<double>(total_length) / static_cast<double>(documents.size());
}

std::vector<double> Bm25Index::scores(const std::vector<int64_t>& query) const {
    std::vector<double> score(document_lengths_.size(), 0.0);
    double document_count_n = static_cast<double>(document_lengths_.size());
    auto [k1, b] = parameters_;
    for (int64_t token : query) {
        auto found = postings_.find(token);
        if (found == postings_.end()) continue;  // a token no document holds adds nothing
        double document_frequency = static_cast<double>(found->second.size());
        double idf = std::log(1.0 + (document_count_n - document_frequency + 0.5) / (document_frequency + 0.5));
        // Only documents holding the token get here, so average_length_ > 0.
        for (const Posting& posting : found->second) {
            double tf = static_cast<double>(posting.term_frequency);
            double length_ratio = static_cast<double>(document_lengths_[posting.document]) / average_length_;
            score[posting.document] += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length_ratio));
        }
    }
    return score;
}

TopK Bm25Index::search(const std::vector<std::vector<int64_t>>& queries, int64_t k) const {
    int64_t n = document_count(), query_count = static_cast<int64_t>(queries.size());
    NCE_CHECK(1 <= k && k <= n, "Bm25Index::search: k = {} must be between 1 and the corpus size {}", k, n);
    TopK result{Tensor::empty({query_count, k}, Dtype::Int64), Tensor::empty({query_count, k}, Dtype::Float64)};
    int64_t* indices = result.indices.data<int64_t>();
    double* top_scores = result.scores.data<double>();
    std::vector<int64_t> order(static_cast<std::size_t>(n));
    for (int64_t q = 0; q < query_count; ++q) {
        std::vector<double> score = scores(queries[q]);
        std::iota(order.begin(), order.end(), 0);
        std::partial_sort(order.begin(), order.begin() + k, order.end(), [&score](int64_t a, int64_t b) {
            return score[a] > score[b] || (score[a] == score[b] && a < b);
        });
        for (int64_t i = 0; i < k; ++i) {
            indices[q * k + i] = order[i];
            top_scores[q * k + i] = score[order[i]];
        }
    }
    return result;
}

}  // namespace nce::eval
