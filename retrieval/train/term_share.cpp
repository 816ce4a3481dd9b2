// The term part's share of the score, chosen on validation (see term_share.h).
#include "retrieval/train/term_share.h"

#include <cmath>

#include "engine/error.h"
#include "nn/text_encoder.h"

namespace nce::retrieval {
namespace {

double share_of(double c) { return c * c / (1 + c * c); }
double weight_of(double share) { return std::sqrt(share / (1 - share)); }  // the c with that share

}  // namespace

const std::vector<double>& term_share_grid() {
    static const std::vector<double> grid = [] {
        std::vector<double> shares;
        for (int step = 1; step <= 19; ++step) shares.push_back(step / 20.0);
        shares.push_back(0.99);
        shares.push_back(0.999);
        return shares;
    }();
    return grid;
}

Var* term_log_weight_of(nn::EmbeddingModel& model) {
    auto* encoder = dynamic_cast<nn::TextEncoder*>(&model);
    return encoder != nullptr ? encoder->term_log_weight() : nullptr;
}

Tensor with_term_columns_scaled(const Tensor& queries, int64_t vocab_size, double factor) {
    NCE_CHECK(queries.rank() == 2 && queries.size(1) >= vocab_size,
              "term share: query rows must be [Q, D] with D >= the vocabulary's {} term columns", vocab_size);
    const int64_t rows = queries.size(0), width = queries.size(1), first_term = width - vocab_size;
    std::vector<double> values = queries.to(Device::CPU).to_vector();
    for (int64_t row = 0; row < rows; ++row)
        for (int64_t column = first_term; column < width; ++column)
            values[static_cast<size_t>(row * width + column)] *= factor;
    return Tensor::from_vector(values, {rows, width}, queries.dtype());
}

TermShareChoice best_term_share(nn::EmbeddingModel& model, const Tensor& queries, const Tensor& rows,
                                const RankRows& rank, const eval::RelevantSets& relevant) {
    TermShareChoice choice;
    if (queries.size(0) == 0) return choice;
    auto mrr_of = [&](const Tensor& scaled_queries) {
        return eval::retrieval_metrics(rank(scaled_queries, rows).passages, relevant, {10}).at(10).mrr;
    };
    Var* log_weight = term_log_weight_of(model);
    if (log_weight == nullptr) {
        choice.learned_mrr = choice.mrr = mrr_of(queries);
        return choice;
    }
    const int64_t vocab_size = model.config().vocab_size;
    const double learned = std::exp(log_weight->value().item());  // c0
    auto mrr_at = [&](double c) {
        const double factor = (c / learned) * (c / learned);
        return mrr_of(with_term_columns_scaled(queries, vocab_size, factor));
    };
    choice.chosen = true;
    choice.learned_share = share_of(learned);
    choice.learned_mrr = mrr_at(learned);
    choice.share = choice.learned_share;
    choice.mrr = choice.learned_mrr;
    for (double share : term_share_grid()) {
        const double mrr = mrr_at(weight_of(share));
        if (mrr <= choice.mrr) continue;
        choice.share = share;
        choice.mrr = mrr;
    }
    return choice;
}

void set_term_share(nn::EmbeddingModel& model, const TermShareChoice& choice) {
    if (!choice.chosen || choice.share == choice.learned_share) return;  // c stays exactly as learned
    Var* log_weight = term_log_weight_of(model);
    NCE_CHECK(log_weight != nullptr, "term share: the model has no term weights to set a share of");
    log_weight->set_value(Tensor::full(log_weight->shape(), std::log(weight_of(choice.share)), log_weight->dtype(),
                                       log_weight->value().device()));
}

}  // namespace nce::retrieval
