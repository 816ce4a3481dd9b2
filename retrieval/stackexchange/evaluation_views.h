// The three views in which `nce stackexchange compare` scores a ranker on the test split.
// Every answer of a question is relevant to it; a view decides which answers a question is
// ranked against:
//
//   overall        every answer of the test split
//   in-batch       the answers of the questions in its evaluation batch: the test questions,
//                  in order, cut into batches of `batch_questions` questions (the last may be
//                  short), as a model sees them during in-batch training
//   hard-negative  its own answers plus the `hard_negatives` answers of other questions that
//                  BM25 ranks highest for it (whitespace tokens): the lexical look-alikes
//
//   questions q0 q1 q2 q3, batch_questions 2, hard_negatives 1, BM25's best stranger of q0 = a7:
//     overall(q0)       = all answers            in-batch(q0) = answers of q0 and q1
//     hard-negative(q0) = answers of q0 + {a7}
//
// In each view a ranker's scores order the candidates (ties: lower passage index first) and
// the table reports MRR@10, accuracy@1 and NDCG@10 (eval/metrics.h). The hard negatives come
// from BM25, so that view is by construction hard for BM25 itself.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "retrieval/report/metric_table.h"
#include "eval/rankings.h"
#include "data/dataset.h"
#include "engine/tensor.h"

namespace nce::stackexchange {

// scores[q][p]: how well passage p answers query q, for every pair of one split.
using ScoreMatrix = std::vector<std::vector<double>>;

// Inner products of unit embeddings: queries [Q, D] x passages [N, D] -> [Q][N].
ScoreMatrix dense_score_matrix(const Tensor& query_embeddings, const Tensor& passage_embeddings);

// Okapi BM25 of each query against every passage, both cut into `tokens`
// (eval/rankings.h), with the corpus statistics of all the passages.
ScoreMatrix bm25_score_matrix(const std::vector<std::string>& queries, const std::vector<std::string>& passages,
                              eval::LexicalTokens tokens, const eval::Bm25Parameters& parameters);

enum class View { Overall, InBatch, HardNegative };
const std::vector<View>& all_views();
const char* view_name(View view);  // "overall", "in-batch", "hard-negative"

struct ViewOptions {
    int64_t batch_questions = 32;  // in-batch: questions per evaluation batch (>= 1)
    int64_t hard_negatives = 10;   // hard-negative: strangers per question (>= 1)
};

// The candidates of each query in every view, and what is relevant to it.
struct EvaluationViews {
    eval::RelevantSets relevant;                               // [Q]: its answers
    std::vector<std::vector<int64_t>> in_batch_candidates;     // [Q]: sorted passage indices
    std::vector<std::vector<int64_t>> hard_negative_candidates;
    int64_t passages = 0;                                      // the overall view's candidates
};

// Builds the views of `test` from its BM25 scores (whitespace tokens, as in bm25_score_matrix).
// Throws naming the option when one is out of range or a question has no answer.
EvaluationViews make_evaluation_views(const data::RetrievalDataset& test, const ScoreMatrix& lexical_scores,
                                      const ViewOptions& options);

// Each query's candidates in `view`, ordered by `scores` (best first, ties by lower index).
eval::RankedLists rank_in_view(const ScoreMatrix& scores, const EvaluationViews& views, View view);

// The view's columns: "mrr@10", "accuracy@1", "ndcg@10".
const std::vector<std::string>& view_columns();

// One table row: `rankings` (made by rank_in_view or a fusion of two such) scored by
// view_columns(), each cell with its interval from a bootstrap over the test questions.
retrieval::MetricRow score_view(const std::string& name, const eval::RankedLists& rankings,
                                const EvaluationViews& views, const eval::BootstrapOptions& bootstrap = {});

}  // namespace nce::stackexchange
