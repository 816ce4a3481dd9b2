// `nce train` on the user's files: loading, the split, the app's defaults (pairs_app.h).
#include "retrieval/pairs/pairs_app.h"

#include <fmt/format.h>

#include <filesystem>
#include <map>

#include "retrieval/pairs/loss_fit.h"
#include "data/split.h"
#include "engine/error.h"

namespace nce::pairs {
namespace {

// A setting under "app" in the config: a string, or "" when absent.
std::string app_setting(const retrieval::RunConfig& config, const char* key) {
    if (!config.app.contains(key)) return "";
    const nlohmann::json& value = config.app.at(key);
    NCE_CHECK(value.is_string(), "config: app.{} must be a file name or format string, got {}", key, value.dump());
    return value.get<std::string>();
}

data::Leniency leniency_of(const retrieval::RunConfig& config) {
    bool lenient = config.app.contains("lenient") && config.app.at("lenient") == true;
    return lenient ? data::Leniency::Lenient : data::Leniency::Strict;
}

// Reads one pairs file, printing what a lenient read skipped.
data::PairsFile read_pairs(const std::string& path, const retrieval::RunConfig& config) {
    NCE_CHECK(std::filesystem::is_regular_file(path), "{}: no such file (give a JSON lines, CSV or TSV file of pairs)",
              path);
    data::PairsFile file = data::read_pairs_file(path, data::pairs_format(path, app_setting(config, "format")),
                                                 leniency_of(config));
    for (const auto& [reason, count] : file.report.skipped)
        fmt::print("--lenient: skipped {} row(s) of {}: {}\n", count, path, reason);
    return file;
}

// Appends `part` to `whole` with every query and passage group prefixed by `side`.
void append_with_groups(data::RetrievalDataset& whole, const data::RetrievalDataset& part, const std::string& side) {
    const auto query_offset = static_cast<int64_t>(whole.queries.size());
    const auto passage_offset = static_cast<int64_t>(whole.passages.size());
    for (data::Query query : part.queries) {
        query.group = side + ":" + query.group;
        whole.queries.push_back(std::move(query));
    }
    for (data::Passage passage : part.passages) {
        passage.group = side + ":" + passage.group;
        whole.passages.push_back(std::move(passage));
    }
    for (data::Relevance entry : part.relevance) {
        entry.query += query_offset;
        entry.passage += passage_offset;
        whole.relevance.push_back(entry);
    }
}

bool starts_with(const std::string& text, const std::string& prefix) { return text.rfind(prefix, 0) == 0; }

// The queries whose group starts with `side` + ":", the passages relevant to them, and (with
// `with_corpus`) the corpus passages; relevance re-indexed.
data::RetrievalDataset side_of(const data::RetrievalDataset& dataset, const std::string& side, bool with_corpus) {
    data::RetrievalDataset part;
    part.name = dataset.name;
    std::vector<int64_t> new_query(dataset.queries.size(), -1), new_passage(dataset.passages.size(), -1);
    for (size_t q = 0; q < dataset.queries.size(); ++q)
        if (starts_with(dataset.queries[q].group, side + ":")) {
            new_query[q] = static_cast<int64_t>(part.queries.size());
            part.queries.push_back(dataset.queries[q]);
        }
    auto keep_passage = [&](int64_t p) {
        if (new_passage[static_cast<size_t>(p)] >= 0) return;
        new_passage[static_cast<size_t>(p)] = static_cast<int64_t>(part.passages.size());
        part.passages.push_back(dataset.passages[static_cast<size_t>(p)]);
    };
    for (data::Relevance entry : dataset.relevance) {
        if (new_query[static_cast<size_t>(entry.query)] < 0) continue;
        keep_passage(entry.passage);
        entry.query = new_query[static_cast<size_t>(entry.query)];
        entry.passage = new_passage[static_cast<size_t>(entry.passage)];
        part.relevance.push_back(entry);
    }
    for (size_t p = 0; p < dataset.passages.size(); ++p)
        if (with_corpus && dataset.passages[p].group == kCorpusGroup) keep_passage(static_cast<int64_t>(p));
    return part;
}

// Adds every corpus passage of `dataset` to `test`.
void add_corpus(data::RetrievalDataset& test, const data::RetrievalDataset& dataset) {
    for (const data::Passage& passage : dataset.passages)
        if (passage.group == kCorpusGroup) test.passages.push_back(passage);
}

}  // namespace

data::RetrievalDataset load_pairs_dataset(const retrieval::RunConfig& config) {
    NCE_CHECK(!config.data.empty(), "nce train: give the training pairs with --train FILE (JSON lines, CSV or TSV "
              "with columns anchor, positive, ...)");
    data::PairsFile train_file = read_pairs(config.data, config);
    check_loss_fits(train_file, config.loss, config.triplet_negatives);
    NCE_CHECK(config.mini_batch_size == 0 || train_file.negative_columns == 0,
              "--mini-batch-size (GradCache) caches queries and positives only, and {} has negative columns; drop "
              "--mini-batch-size or the negative columns", config.data);
    data::RetrievalDataset dataset;
    dataset.name = config.data;
    append_with_groups(dataset, data::pairs_dataset(train_file), "train");
    std::string validation = app_setting(config, "validation");
    if (!validation.empty()) append_with_groups(dataset, data::pairs_dataset(read_pairs(validation, config)), "validation");
    std::string corpus = app_setting(config, "corpus");
    if (!corpus.empty()) {
        NCE_CHECK(std::filesystem::is_regular_file(corpus), "--corpus {}: no such file (give a .txt file of one text "
                  "per line, or a JSON lines, CSV or TSV file with a text column)", corpus);
        int64_t number = 0;
        for (std::string& text : data::read_corpus_texts(corpus, "")) {
            ++number;
            dataset.passages.push_back({fmt::format("corpus {}", number), std::move(text), kCorpusGroup});
        }
    }
    dataset.report = train_file.report;
    return dataset;
}

data::DatasetSplits split_pairs_dataset(const data::RetrievalDataset& dataset, const retrieval::RunConfig& config) {
    data::RetrievalDataset train_side = side_of(dataset, "train", false);
    if (app_setting(config, "validation").empty()) {
        data::DatasetSplits splits =
            data::split_by_group(train_side, config.validation_fraction, config.test_fraction, config.seed);
        add_corpus(splits.test, dataset);
        return splits;
    }
    data::DatasetSplits splits = data::split_by_group(train_side, config.validation_fraction, 0.0, config.seed);
    splits.test = side_of(dataset, "validation", true);
    return splits;
}

retrieval::RetrievalApp pairs_app() {
    retrieval::RetrievalApp app;
    app.name = "train";
    app.description = "train a text encoder on your own pairs (--train FILE), evaluate it beside BM25";
    retrieval::RunConfig& defaults = app.defaults;
    defaults.output = "runs/train";
    defaults.d_model = 128;
    defaults.num_layers = 2;
    defaults.nhead = 4;
    defaults.dim_feedforward = 256;
    // Sized to the training file as the apps size theirs (retrieval/settings/data_sizes.h): a fixed 48
    // query tokens cut 423 of 463 StackExchange questions (title and body).
    defaults.max_query_length = retrieval::kSizedToData;
    defaults.max_passage_length = retrieval::kSizedToData;
    defaults.loss = "infonce";
    defaults.batch_size = 32;
    defaults.max_steps = 300;
    defaults.warmup_steps = 30;
    defaults.evaluate_every = 50;
    app.bm25_variants = {eval::LexicalTokens::Whitespace};
    app.chunk_overlap = 16;  // neighbouring windows of a long passage share 16 tokens
    app.chunked_passages = true;  // long passages are read whole, in windows
    app.load_dataset = load_pairs_dataset;
    app.split = split_pairs_dataset;
    app.test_split_name = [](const retrieval::RunConfig& config) {
        std::string validation = app_setting(config, "validation");
        return validation.empty() ? std::string("test split (held out of --train, by query)")
                                  : "--validation file " + validation;
    };
    app.extra_results = [](const retrieval::RunConfig& config) {
        nlohmann::json facts = {{"train", config.data}};
        for (const char* key : {"validation", "corpus"})
            if (!app_setting(config, key).empty()) facts[key] = app_setting(config, key);
        return facts;
    };
    return app;
}

}  // namespace nce::pairs
