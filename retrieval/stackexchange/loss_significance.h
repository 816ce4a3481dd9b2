// Which losses of a `nce stackexchange compare` view do worse than the best one beyond what
// the choice of test questions explains.
//
// In one view's table, the best loss is the loss row with the highest value of `metric`
// (MRR@10 in compare; a tie goes to the loss listed first). Every other loss is tested against
// it with the paired bootstrap of eval/bootstrap.h on the per-query values of that column (the
// same resampled test questions for both), and its row is marked in the table's mark column
// "vs best <metric>":
//
//   best          the best loss itself
//   p=0.004 *     the difference from the best is significant at level alpha (p < alpha)
//   p=0.412       it is not: the test questions cannot tell the two apart
//   p<0.001 *     no replicate of the bootstrap flipped the difference's sign (p printed as 0
//                 would claim more than 1,000 resamples can show)
//
// The best is picked on the test questions it is then compared on, and each loss is tested on
// its own, with no correction for testing several: a `*` says "this loss is behind the best on
// these questions beyond resampling noise", not a family-wise guarantee. Rows that are not
// losses (untrained model, BM25, hybrid) are left unmarked. The best loss is also tested
// against the untrained model the same way (best_against_untrained): did training help at all.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "retrieval/report/against_baseline.h"
#include "retrieval/report/metric_table.h"
#include "eval/bootstrap.h"

namespace nce::stackexchange {

struct LossAgainstBest {
    std::string loss;
    eval::PairedBootstrapTest test;  // this loss minus the best, on `metric`
};

struct SignificanceAgainstBest {
    std::string metric;  // the column compared, e.g. "mrr@10"
    std::string best;    // the loss with the highest value of it
    double alpha = retrieval::kSignificanceLevel;
    eval::BootstrapOptions bootstrap;
    std::vector<LossAgainstBest> others;  // every other loss, in the table's row order
    // The best loss minus where every loss started (the row kUntrainedRow, or kZeroShotRow
    // with --init), when the table has it; `start` names that row.
    std::optional<eval::PairedBootstrapTest> best_against_untrained;
    std::string start;
};

inline constexpr const char* kUntrainedRow = "untrained model";
inline constexpr const char* kZeroShotRow = "pretrained, zero-shot";

// Tests the rows of `table` named in `losses` as described above, using each row's per_query
// values of `metric` (retrieval::score_rankings keeps them), and writes the marks and the mark
// column's header into `table`. Throws naming what is missing when a loss has no row or no
// per-query values of `metric`, or `losses` is empty.
SignificanceAgainstBest mark_losses_against_best(retrieval::MetricTable& table, const std::vector<std::string>& losses,
                                                 const std::string& metric, double alpha,
                                                 const eval::BootstrapOptions& bootstrap);

// The mark a row gets for `test` at `alpha`: "p=0.004 *", "p=0.412", "p<0.001 *" (the runs'
// comparison with BM25 marks its rows the same way).
using retrieval::significance_mark;

// For compare.json: {"metric", "best", "alpha", "method", "resamples", "seed",
// "losses": {loss: {"difference", "low", "high", "p_value", "significant"}}}.
nlohmann::json significance_to_json(const SignificanceAgainstBest& significance);

// One line for a view: the best loss against the untrained model, the difference with its
// interval and p, and whether it is beyond the noise; empty when the table has no such row.
std::string best_against_untrained_line(const std::string& view, const SignificanceAgainstBest& significance);

// The note printed under the tables: what the mark column and its `*` mean.
std::string significance_note(const std::string& metric, double alpha, const eval::BootstrapOptions& bootstrap);

}  // namespace nce::stackexchange
