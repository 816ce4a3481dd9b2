#include "data/batching.h"

#include <algorithm>
#include <string_view>
#include <unordered_set>

#include "data/no_duplicates_sampler.h"
#include "engine/random.h"

namespace nce::data {
namespace {

// A question's answers, best first: by rank, then higher score, then lower passage index.
// An answer whose text repeats a better answer's text is dropped (it would be its own
// false negative).
std::vector<std::vector<Relevance>> answers_by_question(const RetrievalDataset& dataset,
                                                        std::map<std::string, int64_t>& skipped) {
    const int64_t query_count = static_cast<int64_t>(dataset.queries.size());
    const int64_t passage_count = static_cast<int64_t>(dataset.passages.size());
    std::vector<std::vector<Relevance>> answers(dataset.queries.size());
    for (size_t entry = 0; entry < dataset.relevance.size(); ++entry) {
        const Relevance& relevance = dataset.relevance[entry];
        NCE_CHECK(relevance.query >= 0 && relevance.query < query_count && relevance.passage >= 0 &&
                      relevance.passage < passage_count,
                  "batching: relevance entry {} of dataset '{}' points at query {} and passage {}, outside its {} "
                  "queries and {} passages",
                  entry, dataset.name, relevance.query, relevance.passage, query_count, passage_count);
        answers[relevance.query].push_back(relevance);
    }
    for (std::vector<Relevance>& list : answers) {
        std::sort(list.begin(), list.end(), [](const Relevance& a, const Relevance& b) {
            if (a.rank != b.rank) return a.rank < b.rank;
            if (a.score != b.score) return a.score > b.score;
            return a.passage < b.passage;
        });
        std::unordered_set<std::string_view> texts;
        std::vector<Relevance> distinct;
        for (const Relevance& answer : list) {
            if (texts.insert(dataset.passages[answer.passage].text).second)
                distinct.push_back(answer);
            else
                ++skipped["answer repeating a better answer's text"];
        }
        list = std::move(distinct);
    }
    return answers;
}

// What one question brings: its rows' answers (best first) and a triplet's hard negative.
struct Unit {
    int64_t query = 0;
    std::vector<Relevance> answers;  // one row each
    std::vector<int64_t> hard_negatives;
    bool wants_in_batch_negative = false;  // triplet: a negative from another row, chosen after packing
    int64_t rows = 1;
};

void check_options(const BatchOptions& options) {
    const char* strategy = batch_strategy_name(options.strategy);
    NCE_CHECK(options.batch_size >= 2,
              "batching {}: batch_size must be at least 2 (a batch needs another question to contrast with), got {}",
              strategy, options.batch_size);
    NCE_CHECK(options.max_positive_rank >= 0, "batching {}: max_positive_rank must be >= 0, got {}", strategy,
              options.max_positive_rank);
    NCE_CHECK(options.mixed_hard_fraction >= 0 && options.mixed_hard_fraction <= 1,
              "batching {}: mixed_hard_fraction must be in [0, 1], got {}", strategy, options.mixed_hard_fraction);
    NCE_CHECK(options.max_answers >= 2, "batching {}: max_answers must be at least 2 (a list needs two answers), got {}",
              strategy, options.max_answers);
    NCE_CHECK(options.max_hard_negatives >= 0 && options.max_hard_negatives <= 5,
              "batching {}: max_hard_negatives must be in [0, 5], got {}", strategy, options.max_hard_negatives);
}

// The first `limit` answers (the best ones), counting the rest as skipped for `reason`.
std::vector<Relevance> first_answers(const std::vector<Relevance>& answers, int64_t limit, const char* reason,
                                     std::map<std::string, int64_t>& skipped) {
    int64_t kept = std::min<int64_t>(limit, static_cast<int64_t>(answers.size()));
    if (static_cast<int64_t>(answers.size()) > kept) skipped[reason] += static_cast<int64_t>(answers.size()) - kept;
    return std::vector<Relevance>(answers.begin(), answers.begin() + kept);
}

// One unit per usable question, in question order.
std::vector<Unit> make_units(const std::vector<std::vector<Relevance>>& answers, const BatchOptions& options,
                             Generator& generator, std::map<std::string, int64_t>& skipped) {
    std::vector<Unit> units;
    for (size_t query = 0; query < answers.size(); ++query) {
        const std::vector<Relevance>& list = answers[query];
        if (list.empty()) {
            ++skipped["question without answers"];
            continue;
        }
        Unit unit;
        unit.query = static_cast<int64_t>(query);
        const std::vector<Relevance> lower(list.begin() + 1, list.end());  // below the best answer
        switch (options.strategy) {
            case BatchStrategy::InfoNce:
                unit.answers = {list[0]};
                break;
            case BatchStrategy::MultiplePositives: {
                std::vector<Relevance> good;
                for (const Relevance& answer : list)
                    if (!answer.hard_negative && (answer.rank <= options.max_positive_rank || answer.score > 0))
                        good.push_back(answer);
                if (good.empty()) {
                    ++skipped["question without a good answer"];
                    continue;
                }
                unit.answers = first_answers(good, options.batch_size, "answers beyond batch_size", skipped);
                break;
            }
            case BatchStrategy::HardNegative:
                unit.answers = first_answers(list, options.batch_size, "answers beyond batch_size", skipped);
                break;
            case BatchStrategy::Triplet: {
                unit.answers = {list[0]};
                bool has_hard = !lower.empty();
                bool use_hard = options.triplet_negatives == TripletNegatives::HardNegative ||
                                (options.triplet_negatives == TripletNegatives::Mixed && has_hard &&
                                 generator.next_uniform() < options.mixed_hard_fraction);
                if (use_hard && !has_hard) {
                    ++skipped["question with one answer (no hard negative)"];
                    continue;
                }
                if (use_hard)
                    unit.hard_negatives = {lower[generator.next_index(static_cast<int64_t>(lower.size()))].passage};
                else
                    unit.wants_in_batch_negative = true;
                break;
            }
            case BatchStrategy::Listwise:
                if (list.size() < 2) {
                    ++skipped["question with one answer (a list needs two)"];
                    continue;
                }
                unit.answers = first_answers(list, std::min(options.max_answers, options.batch_size),
                                             "answers beyond max_answers", skipped);
                break;
            case BatchStrategy::StandardizedTest: {
                unit.answers = {list[0]};
                int64_t hard = std::min<int64_t>(options.max_hard_negatives, static_cast<int64_t>(lower.size()));
                for (int64_t k = 0; k < hard; ++k) unit.hard_negatives.push_back(lower[k].passage);
                break;
            }
        }
        unit.rows = static_cast<int64_t>(unit.answers.size());
        units.push_back(std::move(unit));
    }
    return units;
}

// Fisher-Yates with the generator's draws.
template <typename T>
void shuffle(std::vector<T>& items, Generator& generator) {
    for (int64_t i = static_cast<int64_t>(items.size()) - 1; i > 0; --i)
        std::swap(items[i], items[generator.next_index(i + 1)]);
}

// A triplet row whose unit asked for an in-batch negative gets the answer of another row,
// drawn uniformly; a row alone in its batch has none and is left out.
void choose_in_batch_negatives(Batch& batch, const std::vector<bool>& wants_in_batch, Generator& generator,
                               std::map<std::string, int64_t>& skipped) {
    const int64_t rows = static_cast<int64_t>(batch.rows.size());
    std::vector<BatchRow> kept;
    for (int64_t i = 0; i < rows; ++i) {
        BatchRow row = batch.rows[i];
        if (wants_in_batch[i]) {
            if (rows < 2) {
                ++skipped["question alone in its batch (no in-batch negative)"];
                continue;
            }
            int64_t other = generator.next_index(rows - 1);  // any row but i
            if (other >= i) ++other;
            row.negatives = {batch.rows[other].passage};
        }
        row.qid = static_cast<int64_t>(kept.size());
        kept.push_back(std::move(row));
    }
    batch.rows = std::move(kept);
}

// The shuffled units reordered group by group, the groups in a random order; within a group
// they keep their shuffled order.
void order_by_group(std::vector<Unit>& units, const RetrievalDataset& dataset, Generator& generator) {
    std::vector<std::string> groups;
    std::map<std::string, size_t> place;
    for (const Unit& unit : units) {
        const std::string& group = dataset.queries[static_cast<size_t>(unit.query)].group;
        if (place.emplace(group, groups.size()).second) groups.push_back(group);
    }
    shuffle(groups, generator);
    for (size_t i = 0; i < groups.size(); ++i) place[groups[i]] = i;
    std::stable_sort(units.begin(), units.end(), [&](const Unit& a, const Unit& b) {
        return place.at(dataset.queries[static_cast<size_t>(a.query)].group) <
               place.at(dataset.queries[static_cast<size_t>(b.query)].group);
    });
}

// Packs units (already shuffled) into batches and writes their rows: one per answer, the
// unit's position in the batch as qid, its hard negatives as every row's negatives.
std::vector<Batch> pack(const std::vector<Unit>& units, const RetrievalDataset& dataset, const BatchOptions& options,
                        Generator& generator, std::map<std::string, int64_t>& skipped) {
    std::vector<BatchUnit> packing_units;
    for (const Unit& unit : units) {
        BatchUnit packing{unit.query, {}, unit.rows};
        for (const Relevance& answer : unit.answers) packing.passages.push_back(answer.passage);
        for (int64_t negative : unit.hard_negatives) packing.passages.push_back(negative);
        packing_units.push_back(std::move(packing));
    }
    std::vector<std::vector<size_t>> groups = pack_units(packing_units, dataset, options.batch_size, options.no_duplicates);

    std::vector<Batch> batches;
    for (size_t group_index = 0; group_index < groups.size(); ++group_index) {
        const std::vector<size_t>& group = groups[group_index];
        Batch batch;
        batch.answers_per_query = options.strategy == BatchStrategy::Listwise ? units[group[0]].rows : 1;
        std::vector<bool> wants_in_batch;  // per row
        for (size_t qid = 0; qid < group.size(); ++qid) {
            const Unit& unit = units[group[qid]];
            for (const Relevance& answer : unit.answers) {
                batch.rows.push_back({unit.query, answer.passage, static_cast<int64_t>(qid), answer.rank, answer.score,
                                      unit.hard_negatives});
                wants_in_batch.push_back(unit.wants_in_batch_negative);
            }
        }
        if (options.strategy == BatchStrategy::Triplet)
            choose_in_batch_negatives(batch, wants_in_batch, generator, skipped);

        int64_t full_rows = options.batch_size / batch.answers_per_query * batch.answers_per_query;
        bool short_last = group_index + 1 == groups.size() && static_cast<int64_t>(batch.rows.size()) < full_rows;
        if (options.drop_last && short_last) {
            skipped["rows of the short last batch (drop_last)"] += static_cast<int64_t>(batch.rows.size());
            continue;
        }
        if (!batch.rows.empty()) batches.push_back(std::move(batch));
    }
    return batches;
}

}  // namespace

BatchStrategy parse_batch_strategy(const std::string& name) {
    for (BatchStrategy strategy : {BatchStrategy::InfoNce, BatchStrategy::MultiplePositives, BatchStrategy::HardNegative,
                                   BatchStrategy::Triplet, BatchStrategy::Listwise, BatchStrategy::StandardizedTest})
        if (name == batch_strategy_name(strategy)) return strategy;
    fail("batching: unknown strategy '{}'; choose infonce, multiple_positives, hard_negative, triplet, listwise or "
         "standardized_test",
         name);
}

const char* batch_strategy_name(BatchStrategy strategy) {
    switch (strategy) {
        case BatchStrategy::InfoNce: return "infonce";
        case BatchStrategy::MultiplePositives: return "multiple_positives";
        case BatchStrategy::HardNegative: return "hard_negative";
        case BatchStrategy::Triplet: return "triplet";
        case BatchStrategy::Listwise: return "listwise";
        case BatchStrategy::StandardizedTest: return "standardized_test";
    }
    return "unknown";
}

TripletNegatives parse_triplet_negatives(const std::string& name) {
    for (TripletNegatives negatives : {TripletNegatives::HardNegative, TripletNegatives::InBatch, TripletNegatives::Mixed})
        if (name == triplet_negatives_name(negatives)) return negatives;
    fail("batching triplet: unknown negatives '{}'; choose hard_negative, in_batch or mixed", name);
}

const char* triplet_negatives_name(TripletNegatives negatives) {
    switch (negatives) {
        case TripletNegatives::HardNegative: return "hard_negative";
        case TripletNegatives::InBatch: return "in_batch";
        case TripletNegatives::Mixed: return "mixed";
    }
    return "unknown";
}

BatchPlan make_batches(const RetrievalDataset& dataset, const BatchOptions& options) {
    check_options(options);
    BatchPlan plan;
    Generator generator(options.seed);
    std::vector<std::vector<Relevance>> answers = answers_by_question(dataset, plan.skipped);
    std::vector<Unit> units = make_units(answers, options, generator, plan.skipped);
    shuffle(units, generator);
    if (options.by_group) order_by_group(units, dataset, generator);

    if (options.strategy != BatchStrategy::Listwise) {
        plan.batches = pack(units, dataset, options, generator, plan.skipped);
    } else {
        // A batch is a rectangle [Q, K]: pack questions with K answers among themselves,
        // then shuffle the batches of all K together.
        for (int64_t answers_per_query = 2; answers_per_query <= options.max_answers; ++answers_per_query) {
            std::vector<Unit> same_k;
            for (const Unit& unit : units)
                if (unit.rows == answers_per_query) same_k.push_back(unit);
            if (same_k.empty()) continue;
            for (Batch& batch : pack(same_k, dataset, options, generator, plan.skipped)) plan.batches.push_back(std::move(batch));
        }
        shuffle(plan.batches, generator);
    }

    return plan;
}

std::vector<std::string> query_texts(const Batch& batch, const RetrievalDataset& dataset) {
    std::vector<std::string> texts;
    for (const BatchRow& row : batch.rows) texts.push_back(dataset.queries.at(row.query).text);
    return texts;
}

std::vector<std::string> passage_texts(const Batch& batch, const RetrievalDataset& dataset) {
    std::vector<std::string> texts;
    for (const BatchRow& row : batch.rows) texts.push_back(dataset.passages.at(row.passage).text);
    return texts;
}

std::vector<std::string> negative_texts(const Batch& batch, const RetrievalDataset& dataset) {
    std::vector<std::string> texts;
    for (const BatchRow& row : batch.rows)
        for (int64_t negative : row.negatives) texts.push_back(dataset.passages.at(negative).text);
    return texts;
}

Tensor qid_tensor(const Batch& batch) {
    std::vector<int64_t> qid;
    for (const BatchRow& row : batch.rows) qid.push_back(row.qid);
    return Tensor::from_indices(qid, {static_cast<int64_t>(qid.size())});
}

Tensor rank_tensor(const Batch& batch) {
    std::vector<int64_t> rank;
    for (const BatchRow& row : batch.rows) rank.push_back(row.rank);
    return Tensor::from_indices(rank, {static_cast<int64_t>(rank.size())});
}

Tensor score_tensor(const Batch& batch, Dtype dtype) {
    std::vector<double> score;
    for (const BatchRow& row : batch.rows) score.push_back(row.score);
    return Tensor::from_vector(score, {static_cast<int64_t>(score.size())}, dtype);
}

}  // namespace nce::data
