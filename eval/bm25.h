// BM25 (Okapi) over token-id sequences: the same int64 ids the model sees, so a lexical
// baseline and hard negatives come from exactly the text the model is trained on.
//
// For a query q (a token sequence) and a document d of length |d| (tokens):
//
//   score(q, d) = sum over tokens t of q (a repeated query token counts each time)
//                   idf(t) · tf(t, d) · (k1 + 1) / (tf(t, d) + k1 · (1 - b + b · |d| / avgdl))
//   idf(t)      = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))
//
// N documents, df(t) = documents containing t, tf(t, d) = times t occurs in d, avgdl = mean
// document length. This idf is Lucene's: always positive, so a very common token never
// lowers a score (rank_bm25's BM25Okapi uses ln((N - df + 0.5)/(df + 0.5)) with a floor).
// Defaults k1 = 1.2, b = 0.75, Lucene's and Elasticsearch's.
//
// Ties: documents with equal scores are ordered by lower document index first.
#pragma once
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "eval/exact_search.h"

namespace nce::eval {

struct Bm25Parameters {
    double k1 = 1.2;  // how fast repeated occurrences saturate
    double b = 0.75;  // how strongly long documents are penalised (0: not at all, 1: fully)
};

class Bm25Index {
public:
    // Builds the inverted index: for each token, the documents it occurs in and how often.
    explicit Bm25Index(const std::vector<std::vector<int64_t>>& documents, Bm25Parameters parameters = {});

    int64_t document_count() const { return static_cast<int64_t>(document_lengths_.size()); }

    // score(query, d) for every document d: [N] values.
    std::vector<double> scores(const std::vector<int64_t>& query) const;

    // Top k documents per query: indices [Q, k] int64, scores [Q, k] float64; 1 <= k <= N.
    TopK search(const std::vector<std::vector<int64_t>>& queries, int64_t k) const;

private:
    struct Posting {
        int64_t document;
        int64_t term_frequency;
    };
    Bm25Parameters parameters_;
    std::vector<int64_t> document_lengths_;
    double average_length_ = 0;
    std::unordered_map<int64_t, std::vector<Posting>> postings_;  // token -> documents holding it
};

}  // namespace nce::eval
