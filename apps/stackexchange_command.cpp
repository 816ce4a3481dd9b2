// nce stackexchange [train|eval|index|search|compare] [flags]
//
// Question -> answer retrieval on a StackExchange dump (every answer of a question is
// relevant to it). With no --data it runs on a generated brewing site in the dump's format
// (retrieval/stackexchange/generated_site.h). train, eval, index and search are the shared
// retrieval app (retrieval/retrieval_app.h); compare trains one model per loss and
// scores them in three views (retrieval/stackexchange/loss_comparison.h).
#include <fmt/core.h>

#include <memory>

#include "apps/commands.h"
#include "apps/retrieval_subcommands.h"
#include "retrieval/retrieval_app.h"
#include "retrieval/stackexchange/loss_comparison.h"
#include "retrieval/stackexchange/posts_dataset.h"

namespace nce::apps {
namespace {

// The defaults: sized so that `train` takes about a minute or two and `compare` (seven losses at
// compare_steps each) a few minutes on two cores. The vocabulary and the lengths are sized to
// the data a run reads (retrieval/data_sizes.h): a small generated site and a real dump get
// their own; the model stays small.
retrieval::RunConfig stackexchange_defaults() {
    retrieval::RunConfig config;
    config.output = "runs/stackexchange";
    config.vocab_size = retrieval::kSizedToData;  // sized to the data, as are the two lengths (retrieval/data_sizes.h)
    config.character_coverage = 1.0;  // English: every character kept
    config.d_model = 64;
    config.num_layers = 1;
    config.nhead = 4;
    config.dim_feedforward = 128;
    config.lexical_head = retrieval::LexicalHead::TermWeights;  // the term-weight head (docs/retrieval_training.md)
    config.max_query_length = retrieval::kSizedToData;
    config.max_passage_length = retrieval::kSizedToData;
    config.loss = "multi_positive";   // every answer of a question is a positive
    // Triplet's negative: another question's best answer. A lower-ranked answer of the same
    // question (hard_negative, mixed) is still one of its answers, relevant in evaluation.
    config.triplet_negatives = data::TripletNegatives::InBatch;
    config.batch_size = 32;
    config.learning_rate = 1e-2;     // a small model learns the paraphrases faster at this rate
    config.max_steps = 1200;
    config.evaluate_every = 200;
    return config;
}

constexpr int64_t compare_steps = 400;  // per loss in `compare`

retrieval::RetrievalApp stackexchange_app() {
    retrieval::RetrievalApp app;
    app.name = "stackexchange";
    app.description =
        "question -> answer retrieval on a StackExchange dump (--data Posts.xml; default: a generated site)";
    app.defaults = stackexchange_defaults();
    app.bm25_variants = {eval::LexicalTokens::Whitespace};
    // Posts are prose with code, names and punctuation in it ("(IPA)", "the OG.", `mashTemp`):
    // read as words, they meet a question's words on the same pieces, as BM25's words do.
    app.identifier_words = true;
    app.chunk_overlap = 16;  // most answers fit one window; long ones share 16 tokens
    app.chunked_passages = true;  // a real dump's answers run long: the model reads them whole, in windows
    app.load_dataset = [](const retrieval::RunConfig& config) { return stackexchange::load_posts_dataset(config); };
    app.extra_results = [](const retrieval::RunConfig& config) {
        return nlohmann::json{{"data", config.data.empty() ? "generated" : config.data}};
    };
    return app;
}

}  // namespace

void add_stackexchange_command(CLI::App& app, int& exit_code) {
    static const retrieval::RetrievalApp stackexchange = stackexchange_app();
    CLI::App* command = add_retrieval_subcommands(app, stackexchange, exit_code);
    const char* app_settings =
        "App settings go under \"app\" in the --config file: questions, max_answers, paraphrase_probability, "
        "accepted_probability (the generated site), lenient (skip bad rows of a real dump), losses, "
        "in_batch_questions, hard_negatives (compare). Real data: --data Posts.xml (or the dump's folder).";
    command->footer(app_settings);

    auto options = std::make_shared<retrieval::RunConfigOptions>();
    CLI::App* compare = command->add_subcommand(
        "compare",
        "train one model per loss (infonce, infonce_symmetric, rank_infonce, hard_negative_infonce, multi_positive, "
        "triplet, listwise; config \"app\".\"losses\") with the same seed and budget, and compare them in three "
        "views (overall, in-batch, hard-negative) beside BM25 and a hybrid; writes <output>/compare/");
    retrieval::RunConfig defaults = stackexchange.defaults;
    defaults.max_steps = compare_steps;
    defaults.evaluate_every = 200;
    options->add_to(*compare, defaults);
    compare->footer(app_settings);
    compare->callback([options, &exit_code]() {
        stackexchange::run_loss_comparison(stackexchange, options->resolve());
        exit_code = 0;
    });
}

}  // namespace nce::apps
