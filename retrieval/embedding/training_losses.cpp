// The losses a retrieval model trains with: each one's batch and call (training_losses.h).
#include "retrieval/embedding/training_losses.h"

#include <fmt/format.h>
#include <set>

#include "distributed/distributed_losses.h"
#include "engine/error.h"
#include "losses/losses.h"
#include "retrieval/embedding/prompts.h"
#include "retrieval/embedding/run_device.h"

namespace nce::retrieval {

std::vector<std::string> batch_hard_negative_texts(const data::Batch& batch, const data::RetrievalDataset& train,
                                                   const std::vector<std::vector<int64_t>>& hard_negatives) {
    std::set<std::string> taken;
    for (const data::BatchRow& row : batch.rows) taken.insert(train.passages[static_cast<size_t>(row.passage)].text);
    std::vector<std::string> texts;
    for (const data::BatchRow& row : batch.rows)
        for (int64_t passage : hard_negatives[static_cast<size_t>(row.query)]) {
            const std::string& text = train.passages[static_cast<size_t>(passage)].text;
            if (taken.insert(text).second) texts.push_back(text);
        }
    return texts;
}

std::vector<std::string> as_queries(const nn::EmbeddingModel& model, std::vector<std::string> texts) {
    return with_prompt(model.config().query_prompt, std::move(texts));
}
std::vector<std::string> as_passages(const nn::EmbeddingModel& model, std::vector<std::string> texts) {
    return with_prompt(model.config().passage_prompt, std::move(texts));
}

namespace {

// ---- the in-batch losses on embeddings: q [n, d], p [n, d], negatives [M, d] or undefined ----

Var infonce_pairs(const Var& q, const Var& p, const Var& negatives, const losses::LossArguments& parameters) {
    return losses::infonce(q, p, negatives, Var(), parameters.number("tau"));
}
// The extra negatives count in the q -> p direction.
Var infonce_symmetric_pairs(const Var& q, const Var& p, const Var& negatives, const losses::LossArguments& parameters) {
    return losses::infonce_symmetric(q, p, negatives, Var(), parameters.number("tau"));
}
// matryoshka takes no extra negatives: its callers pass none.
Var matryoshka_pairs(const Var& q, const Var& p, const Var&, const losses::LossArguments& parameters) {
    return losses::matryoshka(q, p, Var(), parameters.number("tau"),
                              losses::parse_matryoshka_dims(parameters.text("dims")),
                              losses::parse_matryoshka_weights(parameters.text("weights")));
}
// Under mpirun: each process's rows, the other processes' gathered as negatives.
Var distributed_infonce_pairs(const Var& q, const Var& p, const Var& negatives,
                              const losses::LossArguments& parameters) {
    return distributed::infonce(q, p, negatives, Var(), parameters.number("tau"));
}
Var distributed_infonce_symmetric_pairs(const Var& q, const Var& p, const Var& negatives,
                                        const losses::LossArguments& parameters) {
    return distributed::infonce_symmetric(q, p, negatives, Var(), parameters.number("tau"));
}

// ---- each loss's batch: what it embeds and which labels it reads ----

// q [B, d], p [B, d] and the data's hard negatives [M, d] (undefined when it marks none).
Var in_batch_loss(const BatchContext& context) {
    std::vector<std::string> negative_texts =
        batch_hard_negative_texts(context.batch, context.train, context.hard_negatives);
    Var negatives = negative_texts.empty() ? Var()
                                           : context.embed(as_passages(context.model, std::move(negative_texts)),
                                                           context.max_passage_length);
    return context.loss.grad_cache_loss(context.queries(), context.passages(), negatives, context.parameters);
}

// q [B, d], p [B, d]: in-batch negatives only.
Var matryoshka_loss(const BatchContext& context) {
    return matryoshka_pairs(context.queries(), context.passages(), Var(), context.parameters);
}

// q [B, d], p [B, d], qid [B]: rows of one query are each other's positives.
struct GroupedRows {
    Var q, p;
    Tensor qid;
};
GroupedRows grouped_rows(const BatchContext& context) {
    Var q = context.queries(), p = context.passages();
    return {q, p, beside(q, data::qid_tensor(context.batch))};
}

Var multi_positive_loss(const BatchContext& context) {
    GroupedRows rows = grouped_rows(context);
    return losses::multi_positive(rows.q, rows.p, rows.qid, Var(), context.parameters.number("tau"));
}

Var hard_negative_infonce_loss(const BatchContext& context) {
    GroupedRows rows = grouped_rows(context);
    return losses::hard_negative_infonce(rows.q, rows.p, rows.qid, Var(), context.parameters.number("tau"),
                                         context.parameters.number("weight"));
}

// rank [B] and score [B] from the rows (a pairs file's rank and score columns).
Var rank_infonce_loss(const BatchContext& context) {
    GroupedRows rows = grouped_rows(context);
    const losses::LossArguments& parameters = context.parameters;
    losses::RankInfonceOptions options;
    options.tau = parameters.number("tau");
    options.rank_weight = parameters.number("rank_weight");
    options.score_weight = parameters.number("score_weight");
    options.use_ranks = parameters.number("use_ranks") != 0;
    options.use_scores = parameters.number("use_scores") != 0;
    return losses::rank_infonce(rows.q, rows.p, rows.qid, beside(rows.q, data::rank_tensor(context.batch)),
                                beside(rows.q, data::score_tensor(context.batch, Dtype::Float32)), Var(), options);
}

// One pair per row: the query and one of its passages, labelled by the row's score (a pairs
// file's score column; its negatives score 0).   q [B, d], p [B, d], label [B]
struct LabelledPairs {
    Var q, p;
    Tensor label;
};
LabelledPairs labelled_pairs(const BatchContext& context) {
    Var q = context.queries(), p = context.passages();
    return {q, p, beside(q, data::score_tensor(context.batch, Dtype::Float32))};
}

Var cosent_loss(const BatchContext& context) {
    LabelledPairs pairs = labelled_pairs(context);
    return losses::cosent(pairs.q, pairs.p, pairs.label, context.parameters.number("scale"));
}

// cosent ranks pairs by their scores: with one score for all it has nothing to learn.
void check_scores_differ(const data::RetrievalDataset& train) {
    std::set<double> scores;
    for (const data::Relevance& entry : train.relevance) scores.insert(entry.score);
    NCE_CHECK(scores.size() >= 2, "training: loss cosent learns from pairs scored differently, but every training "
              "pair of {} has the same score; give a score column or negative columns, or use infonce", train.name);
}

Var contrastive_loss(const BatchContext& context) {
    for (const data::BatchRow& row : context.batch.rows)
        NCE_CHECK(row.score >= 0 && row.score <= 1, "training: loss contrastive needs labels in [0, 1] (1 = similar), "
                  "got score {} for query '{}'; rescale the score column or use cosent", row.score,
                  context.train.queries[static_cast<size_t>(row.query)].id);
    LabelledPairs pairs = labelled_pairs(context);
    return losses::contrastive(pairs.q, pairs.p, pairs.label, context.parameters.number("margin"),
                               losses::parse_contrastive_metric(context.parameters.text("metric")));
}

// q [B, d], p [B, d], n [B, d]: each row's own negative.
Var triplet_loss(const BatchContext& context) {
    Var n = context.embed(as_passages(context.model, data::negative_texts(context.batch, context.train)),
                          context.max_passage_length);
    return losses::triplet(context.queries(), context.passages(), n, context.parameters.number("margin"),
                           losses::parse_triplet_metric(context.parameters.text("metric")));
}

// Rows come in groups of K with one query: q [Q, d] from each group's first row, a [Q, K, d],
// score [Q, K].
Var listwise_loss(const BatchContext& context) {
    int64_t answers = context.batch.answers_per_query;
    int64_t queries = static_cast<int64_t>(context.batch.rows.size()) / answers;
    std::vector<std::string> all_queries = data::query_texts(context.batch, context.train), group_queries;
    for (int64_t g = 0; g < queries; ++g) group_queries.push_back(all_queries[static_cast<size_t>(g * answers)]);
    Var q = context.embed(as_queries(context.model, group_queries), context.max_query_length);
    Var p = context.passages();
    Var a = reshape(p, {queries, answers, p.value().size(1)});
    Tensor score = beside(q, data::score_tensor(context.batch, Dtype::Float32).reshape({queries, answers}));
    return losses::listwise(q, a, score, context.parameters.number("tau"));
}

}  // namespace

const std::vector<TrainingLoss>& training_losses() {
    using Strategy = data::BatchStrategy;
    using Negatives = NegativeColumns;
    static const std::vector<TrainingLoss> table = {
        // name                  batches                      rows  the batch's loss            GradCache                mpirun                               data check           scores negative columns  labels
        {"infonce",               Strategy::InfoNce,           2,    in_batch_loss,              infonce_pairs,           distributed_infonce_pairs,           nullptr,             false, Negatives::Read,         false},
        {"infonce_symmetric",     Strategy::InfoNce,           2,    in_batch_loss,              infonce_symmetric_pairs, distributed_infonce_symmetric_pairs, nullptr,             false, Negatives::Read,         false},
        {"multi_positive",        Strategy::MultiplePositives, 2,    multi_positive_loss,        nullptr,                 nullptr,                             nullptr,             false, Negatives::Ignored,      false},
        {"rank_infonce",          Strategy::MultiplePositives, 2,    rank_infonce_loss,          nullptr,                 nullptr,                             nullptr,             true,  Negatives::Ignored,      false},
        {"hard_negative_infonce", Strategy::HardNegative,      2,    hard_negative_infonce_loss, nullptr,                 nullptr,                             nullptr,             false, Negatives::PulledCloser, false},
        {"triplet",               Strategy::Triplet,           1,    triplet_loss,               nullptr,                 nullptr,                             nullptr,             false, Negatives::Read,         false},
        {"listwise",              Strategy::Listwise,          1,    listwise_loss,              nullptr,                 nullptr,                             nullptr,             true,  Negatives::Read,         true},
        {"cosent",                Strategy::HardNegative,      2,    cosent_loss,                nullptr,                 nullptr,                             check_scores_differ, true,  Negatives::Read,         true},
        {"contrastive",           Strategy::HardNegative,      2,    contrastive_loss,           nullptr,                 nullptr,                             nullptr,             true,  Negatives::Read,         true},
        {"matryoshka",            Strategy::InfoNce,           2,    matryoshka_loss,            matryoshka_pairs,        nullptr,                             nullptr,             false, Negatives::Ignored,      false},
    };
    return table;
}

const TrainingLoss& training_loss(const std::string& name) {
    for (const TrainingLoss& loss : training_losses())
        if (name == loss.name) return loss;
    fail("training: loss '{}' cannot train a model here; use one of: {}", name, fmt::join(training_loss_names(), ", "));
}

RunLoss run_loss(const std::string& name, const std::map<std::string, std::string>& parameters) {
    const TrainingLoss& row = training_loss(name);
    return RunLoss{row, losses::make_parameters(losses::find_loss(name), parameters)};
}

const std::vector<std::string>& training_loss_names() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> all;
        for (const TrainingLoss& loss : training_losses()) all.push_back(loss.name);
        return all;
    }();
    return names;
}

Var BatchContext::embed(const std::vector<std::string>& texts, int64_t max_length) const {
    return encode_on_model_device(model, tokenizer.encode(texts, max_length), &generator);
}
Var BatchContext::queries() const {
    return embed(as_queries(model, data::query_texts(batch, train)), max_query_length);
}
Var BatchContext::passages() const {
    return embed(as_passages(model, data::passage_texts(batch, train)), max_passage_length);
}

}  // namespace nce::retrieval
