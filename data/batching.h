// Batches of (question, answer) rows for training and evaluation, by six strategies.
//
// A batch is a list of rows. A row names a question (`query`, an index into
// dataset.queries) and one of its answers (`passage`, an index into dataset.passages), with
// what the losses need to know about that answer: which question of the batch it belongs
// to (`qid`), its rank and score within the question, and, for some strategies, explicit
// negative passages. An app encodes query_texts() and passage_texts() with the tokenizer and
// hands qid_tensor(), rank_tensor(), score_tensor() to the loss.
//
// Every strategy builds one unit per usable question (the question and the answers it
// brings), shuffles the units with the seed and packs them into batches of at most
// `batch_size` rows; a question's rows always stay together in one batch. With
// `no_duplicates` (the default) the packing also keeps every text unique in its batch (see
// data/no_duplicates_sampler.h). The same dataset, options and seed give the same batches.
//
// The examples below use one dataset: three questions and their ranked answers
// (rank 0 = best; score in brackets):
//   q0 "how to brew?"      a0 [5] rank 0    a1 [2] rank 1    a2 [-1] rank 2
//   q1 "best hops?"        a3 [3] rank 0
//   q2 "what is ale?"      a4 [4] rank 0    a5 [0] rank 1
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "engine/tensor.h"

namespace nce::data {

enum class BatchStrategy {
    // One row per question: its best answer. The other rows' answers are its negatives.
    //   batch of 3: (q0, a0) (q1, a3) (q2, a4)             -> loss infonce(q, p)
    InfoNce,
    // One row per good answer: rank <= max_positive_rank, or score > 0, and never one marked
    // hard_negative. Rows of one question share a qid, so each of its answers counts as a
    // positive of every row.
    //   max_positive_rank 0: (q0, a0, qid 0, rank 0) (q0, a1, qid 0, rank 1) (q1, a3, qid 1)
    //                        (q2, a4, qid 2)   (a2 has score -1 and a5 score 0: left out)
    //                                                    -> loss multi_positive / rank_infonce
    MultiplePositives,
    // One row per answer, every answer of the question, best first. Rows of one question
    // share a qid: the lower-ranked answers are the hard negatives of the best one.
    //   (q0, a0, qid 0) (q0, a1, qid 0) (q0, a2, qid 0) (q1, a3, qid 1) (q2, a4, qid 2)
    //   (q2, a5, qid 2)                                  -> loss hard_negative_infonce
    HardNegative,
    // One row per question: anchor = the question, positive = its best answer, one negative
    // in `negatives` chosen by `triplet_negatives` (see TripletNegatives).
    //   hard_negative: (q0, a0, neg a1 or a2) (q2, a4, neg a5)   (q1 has no second answer)
    //                                                    -> loss triplet(a, p, n)
    Triplet,
    // One group of K consecutive rows per question: its K best answers with their scores,
    // K = min(answers, max_answers). Questions are batched with others of the same K, so a
    // batch is a rectangle [Q, K]; questions with one answer are left out (K >= 2).
    //   max_answers 2: batch of K = 2: (q0, a0, score 5) (q0, a1, score 2) (q2, a4, score 4)
    //                  (q2, a5, score 0)                -> loss listwise(q, a[Q, K], score[Q, K])
    Listwise,
    // For evaluation. One row per question: its best answer, and in `negatives` up to
    // max_hard_negatives (<= 5) of its next-best answers; the other rows' best answers are
    // the in-batch negatives. Candidates of row i: passage_i, negatives_i, other passages.
    //   (q0, a0, negatives a1 a2) (q1, a3) (q2, a4, negatives a5)
    StandardizedTest,
};

// Where a triplet's negative comes from.
enum class TripletNegatives {
    HardNegative,  // a lower-ranked answer of the same question (questions without one are left out)
    InBatch,       // the best answer of another question in the batch
    Mixed,         // hard with probability mixed_hard_fraction where the question has one, else in-batch
};

// Names as on the command line: infonce, multiple_positives, hard_negative, triplet,
// listwise, standardized_test; hard_negative, in_batch, mixed.
BatchStrategy parse_batch_strategy(const std::string& name);
const char* batch_strategy_name(BatchStrategy strategy);
TripletNegatives parse_triplet_negatives(const std::string& name);
const char* triplet_negatives_name(TripletNegatives negatives);

struct BatchOptions {
    BatchStrategy strategy = BatchStrategy::InfoNce;
    int64_t batch_size = 32;  // the most rows a batch holds (a question's rows are never split)
    uint64_t seed = 0;
    bool no_duplicates = true;  // no query text and no passage text twice in one batch
    // The questions of one group (Query::group: an article, a thread) side by side, the groups
    // in a random order: a batch then holds few groups, and its in-batch negatives are mostly
    // other passages of its rows' own groups. false: questions in a random order.
    bool by_group = false;
    // Leave out the last batch when it is not full (listwise: the last of each K, full at
    // (batch_size / K)·K rows). Other batches can be short too where no_duplicates held
    // questions back; a trainer skips batches with fewer rows than its loss needs.
    bool drop_last = false;
    int64_t max_positive_rank = 0;  // multiple_positives
    TripletNegatives triplet_negatives = TripletNegatives::HardNegative;
    double mixed_hard_fraction = 0.5;  // triplet, mixed
    int64_t max_answers = 4;           // listwise: K is at most this (>= 2)
    int64_t max_hard_negatives = 5;    // standardized_test: 0 to 5
};

struct BatchRow {
    int64_t query = 0;    // index into dataset.queries
    int64_t passage = 0;  // index into dataset.passages: the row's answer (its positive)
    int64_t qid = 0;      // the question's position in the batch (0, 1, ...): rows of one question share it
    int64_t rank = 0;     // the answer's rank within its question, 0 = best (from the dataset)
    double score = 1.0;   // the answer's score (from the dataset)
    std::vector<int64_t> negatives;  // passages: triplet's one negative, standardized_test's hard ones
};

struct Batch {
    std::vector<BatchRow> rows;
    int64_t answers_per_query = 1;  // listwise: K (rows come in groups of K with one qid); else 1
};

struct BatchPlan {
    std::vector<Batch> batches;
    // Questions left out, by reason ("no answer", "only one answer", ...), for reports.
    std::map<std::string, int64_t> skipped;
};

// Builds one epoch of batches. Throws nce::Error on options out of range or a relevance
// entry that points outside the dataset.
BatchPlan make_batches(const RetrievalDataset& dataset, const BatchOptions& options);

// The texts of a batch, one per row (queries repeat for rows of one question).
std::vector<std::string> query_texts(const Batch& batch, const RetrievalDataset& dataset);
std::vector<std::string> passage_texts(const Batch& batch, const RetrievalDataset& dataset);
// Every row's negatives, row after row.
std::vector<std::string> negative_texts(const Batch& batch, const RetrievalDataset& dataset);

// Columns of a batch as the losses take them: int64 [N], int64 [N], float [N].
Tensor qid_tensor(const Batch& batch);
Tensor rank_tensor(const Batch& batch);
Tensor score_tensor(const Batch& batch, Dtype dtype);

}  // namespace nce::data
