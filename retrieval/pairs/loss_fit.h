// Which training losses fit a pairs file's columns (data/pairs_reader.h). The columns say
// what the data knows; a loss that would ignore part of it, or needs what it lacks, is
// refused with one line naming the loss, the columns and the losses that fit. Each loss's
// row (retrieval/embedding/training_losses.h: reads_scores, negatives, needs_labels) says
// what it reads; the table below is what those rows give:
//
//   loss                     needs                        refuses (it would ignore them)
//   infonce                  anchor, positive             score
//   infonce_symmetric        anchor, positive             score
//   matryoshka               anchor, positive             negatives, score
//   multi_positive           anchor, positive             negatives, score
//   rank_infonce             anchor, positive             negatives
//   hard_negative_infonce    anchor, positive             negatives, score
//   triplet                  anchor, positive, and        score
//                            negatives unless
//                            --triplet-negatives in_batch
//   listwise                 negatives or score           -
//   cosent                   negatives or score           -
//   contrastive              negatives or score           -
//
// How each loss reads the rows (retrieval/embedding/training_losses.h): infonce and infonce_symmetric add
// the batch's negatives to the candidates of every query; multi_positive, rank_infonce and
// hard_negative_infonce group the positives of one query (rows sharing an anchor or
// query_id); triplet takes a negative of the row's query; listwise, cosent and contrastive
// score every (anchor, text) pair: the score column, 1 without one, 0 for a negative.
// hard_negative_infonce counts every text of a query's rows as a positive of its own row,
// so negative columns would be pulled towards the anchor: hence refused.
#pragma once
#include <string>
#include <vector>

#include "data/batching.h"
#include "data/pairs_reader.h"

namespace nce::pairs {

// The training losses that fit the file's columns, in training_loss_names() order.
std::vector<std::string> losses_that_fit(const data::PairsFile& file, data::TripletNegatives triplet_negatives);

// Throws nce::Error unless `loss` fits the file's columns (the table above).
void check_loss_fits(const data::PairsFile& file, const std::string& loss, data::TripletNegatives triplet_negatives);

}  // namespace nce::pairs
