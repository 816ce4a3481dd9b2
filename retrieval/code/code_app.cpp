#include "retrieval/code/code_app.h"

#include <fmt/format.h>

#include <memory>

#include "retrieval/code/code_corpus.h"
#include "retrieval/code/whole_corpus_split.h"

namespace nce::code {
namespace {

// What the last corpus load found, for results.json (one run per process).
struct CorpusFacts {
    std::string description;
    nlohmann::json report = nlohmann::json::object();
};

data::RetrievalDataset load_code_corpus(const retrieval::RunConfig& config, CorpusFacts& facts) {
    CodeCorpusOptions options = code_corpus_options_from_json(config.app, "config \"app\"");
    std::string root = config.data;
    if (root.empty()) {
        CodeCorpusLocation location = default_code_corpus();
        root = location.root;
        facts.description = location.description;
        options.language = location.language;
    } else {
        facts.description = fmt::format("the Python sources in {}", root);
    }
    fmt::print("nce code: mining {} ...\n", facts.description);
    data::RetrievalDataset corpus = mine_code_corpus(root, options);
    facts.report = {{"records", corpus.report.records}, {"skipped", corpus.report.skipped}};
    fmt::print("nce code: {} functions kept (", corpus.queries.size());
    bool first = true;
    for (const auto& [reason, count] : corpus.report.skipped) {
        fmt::print("{}{} {}", first ? "" : ", ", count, reason);
        first = false;
    }
    fmt::print("{})\n", first ? "none left out" : " left out");
    return corpus;
}

}  // namespace

retrieval::RunConfig code_defaults() {
    retrieval::RunConfig defaults;
    defaults.output = "runs/code";
    defaults.vocab_size = retrieval::kSizedToData;  // sized to the data, as are the two lengths (retrieval/settings/data_sizes.h)
    defaults.character_coverage = 0.9995;
    defaults.max_query_length = retrieval::kSizedToData;
    defaults.max_passage_length = retrieval::kSizedToData;
    defaults.d_model = 128;
    defaults.num_layers = 2;
    defaults.nhead = 4;
    defaults.dim_feedforward = 256;
    defaults.lexical_head = retrieval::LexicalHead::TermWeights;  // the term-weight head (docs/retrieval_training.md)
    defaults.loss = "infonce_symmetric";
    defaults.batch_size = 64;
    defaults.max_steps = 250;
    defaults.warmup_steps = 25;
    defaults.learning_rate = 1e-3;
    defaults.evaluate_every = 125;
    defaults.app = {{"require_docstring", true}, {"skip_tests", true}, {"split_by", "file"}, {"language", "python"},
                    {"max_functions", 0}};
    return defaults;
}

retrieval::RetrievalApp code_app() {
    retrieval::RetrievalApp app;
    app.name = "code";
    app.description = "code retrieval, signature + docstring -> body (no --data: the Python standard library)";
    app.defaults = code_defaults();
    app.bm25_variants = {eval::LexicalTokens::Whitespace, eval::LexicalTokens::CodeIdentifiers};
    app.with_rank_at_k = true;
    app.tested_metric = "rank@1";
    app.identifier_words = true;
    app.chunk_overlap = 16;
    auto facts = std::make_shared<CorpusFacts>();
    app.load_dataset = [facts](const retrieval::RunConfig& config) { return load_code_corpus(config, *facts); };
    app.split = [](const data::RetrievalDataset& dataset, const retrieval::RunConfig& config) {
        return split_with_whole_corpus_test(dataset, config.validation_fraction, config.test_fraction, config.seed);
    };
    app.extra_results = [facts](const retrieval::RunConfig& config) {
        return nlohmann::json{{"task", "signature + docstring -> body; test queries ranked over every body of the corpus"},
                              {"corpus", facts->description},
                              {"split_by", config.app.value("split_by", "file")},
                              {"mining", facts->report}};
    };
    return app;
}

retrieval::RunConfig features_defaults() {
    retrieval::RunConfig defaults = code_defaults();
    defaults.output = "runs/code-features";
    defaults.vocab_size = 4000;  // the sig_predictor reads features, not tokens: fixed sizes, no lexical head
    defaults.max_query_length = 48;
    defaults.max_passage_length = 96;
    defaults.lexical_head = retrieval::LexicalHead::None;
    defaults.loss = "infonce";
    defaults.batch_size = 64;
    defaults.max_steps = 400;
    defaults.learning_rate = 1e-3;
    defaults.dropout = 0.0;
    defaults.evaluate_every = 100;
    return defaults;
}

}  // namespace nce::code
