// The table of retrieval/pairs/loss_fit.h, read off each loss's row (training_losses.h).
#include "retrieval/pairs/loss_fit.h"

#include <fmt/format.h>

#include <algorithm>

#include "retrieval/embedding/training_losses.h"
#include "engine/error.h"

namespace nce::pairs {
namespace {

// Why `loss` does not fit the file's columns, or "" when it does.
std::string misfit(const data::PairsFile& file, const retrieval::TrainingLoss& loss,
                   data::TripletNegatives triplet_negatives) {
    using retrieval::NegativeColumns;
    const bool negatives = file.negative_columns > 0;
    const bool score = file.has_score;
    if (loss.needs_labels)
        return negatives || score ? "" : "it needs a score column or negative columns to tell good pairs from bad";
    if (score && !loss.reads_scores) return "it treats every pair as a positive and would ignore the score column";
    if (negatives && loss.negatives == NegativeColumns::Ignored) return "it would ignore the negative columns";
    if (negatives && loss.negatives == NegativeColumns::PulledCloser)
        return "it counts every text of a query as a positive, so it would pull the negatives towards the anchor";
    if (!negatives && loss.strategy == data::BatchStrategy::Triplet &&
        triplet_negatives == data::TripletNegatives::HardNegative)
        return "--triplet-negatives hard_negative needs negative columns (or use in_batch or mixed)";
    return "";
}

}  // namespace

std::vector<std::string> losses_that_fit(const data::PairsFile& file, data::TripletNegatives triplet_negatives) {
    std::vector<std::string> fitting;
    for (const retrieval::TrainingLoss& loss : retrieval::training_losses())
        if (misfit(file, loss, triplet_negatives).empty()) fitting.push_back(loss.name);
    return fitting;
}

void check_loss_fits(const data::PairsFile& file, const std::string& loss, data::TripletNegatives triplet_negatives) {
    const std::vector<retrieval::TrainingLoss>& rows = retrieval::training_losses();
    auto row = std::find_if(rows.begin(), rows.end(), [&](const retrieval::TrainingLoss& known) { return loss == known.name; });
    NCE_CHECK(row != rows.end(), "--loss {}: not a loss nce train can train with; use one of: {}", loss,
              fmt::join(retrieval::training_loss_names(), ", "));
    std::string reason = misfit(file, *row, triplet_negatives);
    NCE_CHECK(reason.empty(), "--loss {} does not fit {} (columns: {}): {}; losses that fit these columns: {}", loss,
              file.path, fmt::join(file.columns, ", "), reason, fmt::join(losses_that_fit(file, triplet_negatives), ", "));
}

}  // namespace nce::pairs
