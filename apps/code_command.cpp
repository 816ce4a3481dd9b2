// nce code [train|eval|index|search|features|make-features]: code retrieval, a function's
// signature and docstring -> its body.
//
// The corpus (retrieval/code/code_corpus.h) is the Python standard library of the python3 on PATH
// (or --data DIR, any folder of Python sources): every documented function outside the test
// suites, one query (signature + docstring) and one passage (body) each. The split keeps each
// file (or package, "app": {"split_by": "package"}) on one side, and each test signature is
// ranked against every body of the corpus (retrieval/code/whole_corpus_split.h). The table shows
// the untrained model, BM25 on whitespace tokens and on code identifiers (split at
// punctuation, '_' and camelCase), the trained model, and the hybrid, with Rank@1 and
// Rank@10. The run itself is retrieval/retrieval_app.h.
//
// `features` trains the seed's sig_predictor on precomputed teacher features instead of text
// (retrieval/code/teacher_features.h for the folder's layout, retrieval/code/sig_predictor_training.h);
// `make-features` writes a synthetic folder of that layout to try it on.
#include <fmt/format.h>

#include <memory>

#include "retrieval/code/code_corpus.h"
#include "retrieval/code/pretrained_teacher.h"
#include "nn/sentence_transformers_folder.h"
#include "retrieval/code/sig_predictor_training.h"
#include "retrieval/code/teacher_features.h"
#include "retrieval/code/whole_corpus_split.h"
#include "apps/commands.h"
#include "retrieval/gemm_precision_option.h"
#include "apps/retrieval_subcommands.h"
#include "retrieval/retrieval_app.h"
#include "engine/error.h"

namespace nce::apps {
namespace {

// What the last corpus load found, for results.json (one run per process).
struct CorpusFacts {
    std::string description;
    nlohmann::json report = nlohmann::json::object();
};

data::RetrievalDataset load_code_corpus(const retrieval::RunConfig& config, CorpusFacts& facts) {
    code::CodeCorpusOptions options = code::code_corpus_options_from_json(config.app, "config \"app\"");
    std::string root = config.data;
    if (root.empty()) {
        code::CodeCorpusLocation location = code::default_code_corpus();
        root = location.root;
        facts.description = location.description;
        options.language = location.language;
    } else {
        facts.description = fmt::format("the Python sources in {}", root);
    }
    fmt::print("nce code: mining {} ...\n", facts.description);
    data::RetrievalDataset corpus = code::mine_code_corpus(root, options);
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

retrieval::RunConfig code_defaults() {
    retrieval::RunConfig defaults;
    defaults.output = "runs/code";
    defaults.vocab_size = retrieval::kSizedToData;  // sized to the data, as are the two lengths (retrieval/data_sizes.h)
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
        return code::split_with_whole_corpus_test(dataset, config.validation_fraction, config.test_fraction, config.seed);
    };
    app.extra_results = [facts](const retrieval::RunConfig& config) {
        return nlohmann::json{{"task", "signature + docstring -> body; test queries ranked over every body of the corpus"},
                              {"corpus", facts->description},
                              {"split_by", config.app.value("split_by", "file")},
                              {"mining", facts->report}};
    };
    return app;
}

// `nce code features`: the run's flags (sizes, budget, seed, output) plus --features DIR.
void add_features_command(CLI::App& code, int& exit_code) {
    CLI::App* command = code.add_subcommand(
        "features",
        "train the sig_predictor on precomputed teacher features (.npy) and evaluate signature -> body.\n"
        "--features DIR holds, row i = function i:\n"
        "  signature_features.npy  float [N, T, in_dim]  the teacher's features of the signature's tokens\n"
        "  signature_mask.npy      int64/float [N, T]    1 = token, 0 = padding (optional: all tokens)\n"
        "  body_embeddings.npy     float [N, out_dim]    the teacher's embedding of the body (the target)\n"
        "  groups.npy              int64 [N]             file or package of each function (optional)\n"
        "nce code make-features --out DIR writes a synthetic example");
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
    auto options = std::make_shared<retrieval::RunConfigOptions>();
    options->add_to(*command, defaults);
    auto folder = std::make_shared<std::string>();
    command->add_option("--features", *folder, "the folder of teacher features (layout above)")->required();
    command->callback([options, folder, &exit_code] {
        retrieval::RunConfig config = options->resolve();
        retrieval::apply_gemm_precision(config.gemm_precision, Device::CPU);
        code::run_sig_predictor_training(config, *folder);
        exit_code = 0;
    });
}

// `nce code make-features --out DIR`: a synthetic teacher-features folder, or with --init
// FOLDER a pretrained model's (retrieval/code/pretrained_teacher.h) over the code corpus.
void add_make_features_command(CLI::App& code, int& exit_code) {
    CLI::App* command = code.add_subcommand(
        "make-features", "write a teacher-features folder for `nce code features`: synthetic and learnable, or with "
        "--init FOLDER a pretrained model's token states and body embeddings over the code corpus");
    auto options = std::make_shared<code::SyntheticFeatureOptions>();
    auto teacher = std::make_shared<code::PretrainedTeacherOptions>();
    auto folder = std::make_shared<std::string>();
    auto data = std::make_shared<std::string>();
    command->add_option("--out", *folder, "the folder to write (new, or empty)")->required();
    command->add_option("--init", teacher->model_folder, "a sentence-transformers model folder as the frozen teacher "
                        "(its last-layer token states of each signature, its embedding of each body)");
    command->add_option("--data", *data, "with --init: the folder of sources to mine (default: the code app's corpus)");
    command->add_option("--functions", options->functions, "rows N")->capture_default_str();
    command->add_option("--tokens", options->tokens, "signature tokens T (synthetic: each row has 4 to T; with --init "
                        "the signature's first T tokens, 32 unless given)")->capture_default_str();
    command->add_option("--in-dim", options->input_dim, "features per token")->capture_default_str();
    command->add_option("--out-dim", options->output_dim, "size of the body embeddings")->capture_default_str();
    command->add_option("--group-size", options->group_size, "functions per group (file)")->capture_default_str();
    command->add_option("--noise", options->noise, "standard deviation of the noise on each token")->capture_default_str();
    command->add_option("--seed", options->seed, "fixes every number written")->capture_default_str();
    command->callback([command, options, teacher, folder, data, &exit_code] {
        if (!teacher->model_folder.empty()) {
            for (const char* synthetic : {"--functions", "--in-dim", "--out-dim", "--group-size", "--noise", "--seed"})
                NCE_CHECK(command->count(synthetic) == 0, "make-features: {} shapes the synthetic folder; with --init "
                          "the model and the corpus decide it: drop {}", synthetic, synthetic);
            teacher->tokens = command->count("--tokens") > 0 ? options->tokens : 32;
            code::check_new_feature_folder(*folder);
            nn::sentence_transformers_config(teacher->model_folder);  // a bad folder is named before the corpus is mined
            retrieval::RunConfig config = code_defaults();
            config.data = *data;
            data::RetrievalDataset corpus = code_app().load_dataset(config);
            code::write_pretrained_teacher_features(*folder, corpus, *teacher);
            fmt::print("wrote the token states and body embeddings of {} functions by {} to {}\n",
                       corpus.queries.size(), teacher->model_folder, *folder);
            exit_code = 0;
            return;
        }
        NCE_CHECK(data->empty(), "make-features: --data is read with --init only (the synthetic folder needs no "
                  "corpus)");
        code::write_synthetic_teacher_features(*folder, *options);
        fmt::print("wrote {} synthetic functions ({} tokens of {} features -> {}-dimensional bodies) to {}\n",
                   options->functions, options->tokens, options->input_dim, options->output_dim, *folder);
        exit_code = 0;
    });
}

}  // namespace

void add_code_command(CLI::App& app, int& exit_code) {
    CLI::App* code = add_retrieval_subcommands(app, code_app(), exit_code);
    add_features_command(*code, exit_code);
    add_make_features_command(*code, exit_code);
}

}  // namespace nce::apps
