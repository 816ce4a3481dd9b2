#include "retrieval/korquad/korquad_app.h"

#include <filesystem>

#include <fmt/format.h>

#include "data/korquad_reader.h"
#include "engine/error.h"
#include "retrieval/korquad/korquad_generator.h"

namespace nce::korquad {
namespace {

// "app": {"articles": N} in a config file sets the size of the generated data.
int64_t generated_articles(const retrieval::RunConfig& config) {
    const nlohmann::json& articles = config.app.contains("articles") ? config.app.at("articles") : nlohmann::json(300);
    NCE_CHECK(articles.is_number_integer() && articles.get<int64_t>() >= 3,
              "config: app.articles (the generated towns) must be an integer of at least 3, got {}", articles.dump());
    return articles.get<int64_t>();
}

std::string generated_path(const retrieval::RunConfig& config) {
    return (std::filesystem::path(config.output) / "korquad_generated.json").string();
}

data::RetrievalDataset load_korquad(const retrieval::RunConfig& config) {
    if (!config.data.empty()) {
        NCE_CHECK(std::filesystem::is_regular_file(config.data),
                  "--data {}: no such file (give a KorQuAD 1.0 JSON file, e.g. KorQuAD_v1.0_dev.json)", config.data);
        // --lenient: a bad record (an answer not at its answer_start, ...) is counted and skipped.
        bool lenient = config.app.contains("lenient") && config.app.at("lenient") == true;
        data::RetrievalDataset dataset = data::read_korquad(config.data, lenient ? data::Leniency::Lenient : data::Leniency::Strict);
        for (const auto& [reason, count] : dataset.report.skipped)
            fmt::print("--lenient: skipped {} record(s) of {}: {}\n", count, config.data, reason);
        return dataset;
    }
    retrieval::create_output_folder(config.output);
    KorquadGeneratorOptions options;
    options.articles = generated_articles(config);
    options.seed = config.seed;
    write_generated_korquad(generated_path(config), options);
    return data::read_korquad(generated_path(config), data::Leniency::Strict);
}

}  // namespace

retrieval::RetrievalApp korquad_app() {
    retrieval::RetrievalApp app;
    app.name = "korquad";
    app.description = "KorQuAD passage retrieval: train, eval, index and search (no --data: generated Korean data)";
    retrieval::RunConfig& defaults = app.defaults;
    defaults.output = "runs/korquad";
    defaults.vocab_size = retrieval::kSizedToData;  // sized to the data, as are the two lengths (retrieval/settings/data_sizes.h)
    defaults.max_query_length = retrieval::kSizedToData;
    defaults.max_passage_length = retrieval::kSizedToData;
    defaults.d_model = 128;
    defaults.num_layers = 2;
    defaults.nhead = 4;
    defaults.dim_feedforward = 256;
    defaults.lexical_head = retrieval::LexicalHead::TermWeights;  // the term-weight head (docs/retrieval_training.md)
    defaults.loss = "infonce_symmetric";
    defaults.batch_size = 64;
    defaults.max_steps = 300;
    defaults.warmup_steps = 30;
    defaults.learning_rate = 1e-3;
    defaults.evaluate_every = 50;
    defaults.app = {{"articles", 300}};
    app.bm25_variants = {eval::LexicalTokens::Whitespace, eval::LexicalTokens::WhitespaceAndBigrams};
    app.tested_metric = "recall@1";
    app.chunk_overlap = 24;
    app.chunked_passages = true;  // KorQuAD contexts run long: the model reads them whole, in chunks
    app.load_dataset = load_korquad;
    // From a pretrained model: MultipleNegativesRankingLoss at scale 20 in batches of 32, the
    // paragraphs read in windows of 48 tokens, about a sentence, where the answer is (chosen on
    // validation: MRR@10 .949 against .921 in windows of 128; docs/pretrained.md has what else
    // was measured).
    app.fine_tuning = {"infonce", 32, 48};
    app.extra_results = [](const retrieval::RunConfig& config) {
        nlohmann::json facts = {{"task", "question -> paragraph, split by article"}};
        if (config.data.empty()) facts["generated_data"] = {{"file", generated_path(config)}, {"articles", generated_articles(config)}};
        return facts;
    };
    return app;
}

}  // namespace nce::korquad
