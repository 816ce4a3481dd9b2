// The term part's share of the score, chosen on validation (retrieval/train/term_share.h): one
// encoding at the learned weight ranks as the model re-encoded at another weight would, and
// the choice is the smallest grid share with the best validation MRR@10, written into the model.
#include <cmath>
#include <memory>
#include <vector>

#include "eval/rankings.h"
#include "retrieval/settings/run_config.h"
#include "retrieval/train/term_share.h"
#include "retrieval/model/text_model.h"
#include "tests/test_helpers.h"

using namespace nce;
using namespace nce::retrieval;

namespace {

// A small text_encoder with the term-weight head (the apps' default), in float64.
std::unique_ptr<nn::EmbeddingModel> small_term_model(int64_t vocabulary) {
    RunConfig config;
    config.d_model = 16;
    config.nhead = 2;
    config.num_layers = 1;
    config.dim_feedforward = 32;
    config.max_query_length = 8;
    config.max_passage_length = 8;
    config.lexical_head = LexicalHead::TermWeights;
    config.seed = 4;
    Generator generator(config.seed);
    std::unique_ptr<nn::EmbeddingModel> model =
        nn::make_model(text_encoder_config(config, vocabulary), generator, Dtype::Float64);
    model->train(false);
    return model;
}

void set_log_weight(nn::EmbeddingModel& model, double value) {
    Var* log_weight = term_log_weight_of(model);
    REQUIRE(log_weight != nullptr);
    log_weight->set_value(Tensor::full(log_weight->shape(), value, log_weight->dtype()));
}

}  // namespace

TEST_CASE("term share: query term columns scaled by (c / c0)^2 give the scores of the model at c") {
    const int64_t vocabulary = 30, rows = 4, width = 6;
    std::unique_ptr<nn::EmbeddingModel> model = small_term_model(vocabulary);
    std::vector<int64_t> ids(rows * width), mask(rows * width, 1);
    for (int64_t i = 0; i < rows * width; ++i) ids[static_cast<size_t>(i)] = 1 + (i * 7) % (vocabulary - 1);
    Tensor input = Tensor::from_indices(ids, {rows, width}), real = Tensor::from_indices(mask, {rows, width});

    const double c0 = 0.7, c1 = 3.0;
    set_log_weight(*model, std::log(c0));
    Tensor at_c0 = model->encode(input, real, nullptr).value();  // [4, D' + V]
    set_log_weight(*model, std::log(c1));
    Tensor at_c1 = model->encode(input, real, nullptr).value();
    Tensor scaled = with_term_columns_scaled(at_c0, vocabulary, (c1 / c0) * (c1 / c0));

    // Row 0 as the query against rows 0..3: (scaled q . p at c0) (1 + c0^2) / (1 + c1^2) = q . p at c1.
    const int64_t dimensions = at_c0.size(1);
    std::vector<double> a = scaled.to_vector(), b = at_c0.to_vector(), e = at_c1.to_vector();
    double largest_difference = 0;
    for (int64_t row = 0; row < rows; ++row) {
        double from_one_encoding = 0, re_encoded = 0;
        for (int64_t d = 0; d < dimensions; ++d) {
            from_one_encoding += a[static_cast<size_t>(d)] * b[static_cast<size_t>(row * dimensions + d)];
            re_encoded += e[static_cast<size_t>(d)] * e[static_cast<size_t>(row * dimensions + d)];
        }
        from_one_encoding *= (1 + c0 * c0) / (1 + c1 * c1);
        largest_difference = std::max(largest_difference, std::abs(from_one_encoding - re_encoded));
    }
    CHECK(largest_difference < 1e-12);
}

TEST_CASE("term share: the smallest grid share that ranks validation best, written into the model") {
    // Two rest columns and the model's 4 term columns. The query's answer is passage 0: the
    // terms rank it first, the rest ranks passage 1 first (1.0 against 0.5). Passage 0 wins
    // when c^2 * 1 > 0.5 with c^2 = share / (1 - share): from share 1/3 on, so the grid's 0.35.
    const int64_t vocabulary = 4;
    std::unique_ptr<nn::EmbeddingModel> model = small_term_model(vocabulary);
    REQUIRE(model->config().vocab_size == vocabulary);
    const double c0 = std::exp(-2.0);  // learned share 0.018: passage 1 first
    set_log_weight(*model, std::log(c0));
    // Rows as the model writes them at c0: [rest ; c0 terms] (the common 1/sqrt(1 + c0^2) left out).
    Tensor queries = Tensor::from_vector({1, 0, c0 * 1, 0, 0, 0}, {1, 6}, Dtype::Float32);
    Tensor passages = Tensor::from_vector({0.5, std::sqrt(0.75), c0 * 1, 0, 0, 0,  // passage 0
                                           1, 0, 0, c0 * 1, 0, 0},                // passage 1
                                          {2, 6}, Dtype::Float32);
    eval::RelevantSets relevant = {{0}};
    auto rank = [](const Tensor& q, const Tensor& p) { return eval::dense_rankings(q, p, 2); };

    // best_term_share finds it and leaves c as it was; set_term_share writes it.
    TermShareChoice found = best_term_share(*model, queries, passages, rank, relevant);
    CHECK(found.share == doctest::Approx(0.35));
    CHECK(term_log_weight_of(*model)->value().item() == doctest::Approx(-2.0));
    TermShareChoice choice = found;
    set_term_share(*model, choice);
    CHECK(choice.chosen);
    CHECK(choice.learned_share == doctest::Approx(c0 * c0 / (1 + c0 * c0)));
    CHECK(choice.learned_mrr == doctest::Approx(0.5));
    CHECK(choice.share == doctest::Approx(0.35));
    CHECK(choice.mrr == doctest::Approx(1.0));
    CHECK(std::exp(term_log_weight_of(*model)->value().item()) == doctest::Approx(std::sqrt(0.35 / 0.65)));

    // The rest part right and the terms wrong: the learned share is kept when no share beats it.
    set_log_weight(*model, std::log(c0));
    eval::RelevantSets rest_is_right = {{1}};
    TermShareChoice kept = best_term_share(*model, queries, passages, rank, rest_is_right);
    set_term_share(*model, kept);
    CHECK(kept.share == doctest::Approx(kept.learned_share));
    CHECK(kept.mrr == doctest::Approx(1.0));
    CHECK(term_log_weight_of(*model)->value().item() == doctest::Approx(-2.0));
}

TEST_CASE("term share: a model without term weights is scored as it is; no validation queries, nothing chosen") {
    RunConfig config;
    config.d_model = 16;
    config.nhead = 2;
    config.num_layers = 1;
    config.dim_feedforward = 32;
    config.lexical_head = LexicalHead::None;  // mean pooling alone (RunConfig's default; the apps ask for term weights)
    Generator generator(1);
    std::unique_ptr<nn::EmbeddingModel> plain = nn::make_model(text_encoder_config(config, 20), generator);
    CHECK(term_log_weight_of(*plain) == nullptr);
    // Its score is its validation MRR@10 as it is: the query's answer, passage 1, ranks second.
    Tensor query = Tensor::from_vector({1, 0}, {1, 2}, Dtype::Float32);
    Tensor passages = Tensor::from_vector({1, 0, 0.5, 0.5}, {2, 2}, Dtype::Float32);
    auto rank = [](const Tensor& q, const Tensor& p) { return eval::dense_rankings(q, p, 2); };
    TermShareChoice plain_choice = best_term_share(*plain, query, passages, rank, {{1}});
    set_term_share(*plain, plain_choice);  // nothing chosen: nothing to write
    CHECK_FALSE(plain_choice.chosen);
    CHECK(plain_choice.mrr == doctest::Approx(0.5));
    CHECK(plain_choice.learned_mrr == doctest::Approx(0.5));
    Tensor rows = Tensor::zeros({1, 16}, Dtype::Float32);

    std::unique_ptr<nn::EmbeddingModel> with_terms = small_term_model(4);
    CHECK_FALSE(best_term_share(*with_terms, Tensor::zeros({0, 20}, Dtype::Float32), rows, rank, {}).chosen);
}
