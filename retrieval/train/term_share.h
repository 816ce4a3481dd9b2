// The term part's share of the score, chosen on the validation split.
//
// A text_encoder with term weights (nn/text_encoder.h) embeds a text as unit parts side by
// side, the terms' part times c = exp(term_log_weight), re-normalised as one vector, so two
// texts score
//
//   score = (cos_mean + c^2 cos_terms) / (1 + c^2)       share = c^2 / (1 + c^2)
//
// (With both heads, --lexical-head both, the max-pooled part a^2 cos_max joins the mean's side:
// only c is chosen, and "share" is still c^2 / (1 + c^2), not the terms' exact share.)
// c is learned with the rest of the model, but what it fits is the training loss at the
// loss's temperature, not the ranking of questions the model has not seen. Measured on the
// shared data (one run each, test split), the learned c was too small:
//
//   KorQuAD dev, trained model, R@1    .832 at the learned c = 1.44 (share .67)   .857 at c = e^1.5 (share .95)
//   beer, MRR@10                       .638 at the learned c = 3.39 (share .92)   .665 at c = e^2.5 (share .99)
//
// So at the end of a run the share is chosen as the hybrid's fusion weight is: the one with
// the best validation MRR@10 among the learned share and the grid 0.05, 0.10, ..., 0.95, 0.99,
// 0.999 (ties keep the learned share, then the smaller share). The trainer scores the start
// and every evaluated step at its best share too (retrieval_app.cpp), so the step it keeps is
// the best by the measure the run ends with. One encoding
// serves every candidate: with the model's embeddings at its learned c0, multiplying a
// query's term columns by (c / c0)^2 gives inner products
//
//   q' . p = q_rest . p_rest + (c / c0)^2 q_terms . p_terms
//
// which rank passages as the model with c would (both sides share the factor 1 / (1 + c^2)
// and c0's, which change no ranking). The chosen c is written into the model.
#pragma once
#include <functional>
#include <vector>

#include "eval/rankings.h"
#include "engine/nce.h"
#include "eval/metrics.h"
#include "nn/model.h"

namespace nce::retrieval {

struct TermShareChoice {
    bool chosen = false;          // false: the model has no term weights (or no validation): left as it was
    double learned_share = 0;     // c0^2 / (1 + c0^2)
    double share = 0;             // the chosen one
    double learned_mrr = 0;       // validation MRR@10 at the learned share
    double mrr = 0;               // ... at the chosen one
};

// The candidate shares, in the order they are tried after the learned one.
const std::vector<double>& term_share_grid();

// The model's term weight c, or nullptr when it has no term-weight head.
Var* term_log_weight_of(nn::EmbeddingModel& model);

// Scales the term columns (the last vocab_size) of query rows [Q, D] by factor.
Tensor with_term_columns_scaled(const Tensor& queries, int64_t vocab_size, double factor);

using RankRows = std::function<eval::RankedLists(const Tensor&, const Tensor&)>;

// The share that ranks validation best, the model left as it is. queries [Q, D] and rows
// [N, D]: the model's embeddings of the validation queries and passages (or windows) at its
// current c; rank(queries, rows) turns them into passage rankings the app's way (a passage as
// its best window); relevant: the validation answers. For a model without term weights
// `chosen` is false and `mrr` is its validation MRR@10 as it is (so the trainer can score any
// model this way); with no validation query everything is 0.
TermShareChoice best_term_share(nn::EmbeddingModel& model, const Tensor& queries, const Tensor& rows,
                                const RankRows& rank, const eval::RelevantSets& relevant);

// Writes the share of `choice` (best_term_share's) into `model` as its c. c stays exactly as
// learned when the learned share won, and nothing changes when nothing was chosen.
void set_term_share(nn::EmbeddingModel& model, const TermShareChoice& choice);

}  // namespace nce::retrieval
