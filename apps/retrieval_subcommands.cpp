// `nce <app>` for a retrieval app (korquad, stackexchange, code, train): the subcommands and
// their flags, each calling the run it names in retrieval/run/retrieval_app.h.
#include "apps/retrieval_subcommands.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include "engine/error.h"
#include "retrieval/settings/gemm_precision_option.h"
#include "retrieval/index/passage_index.h"
#include "retrieval/settings/run_config.h"

namespace nce::apps {

using retrieval::PromptOverride;
using retrieval::RetrievalApp;
using retrieval::RunConfig;
using retrieval::RunConfigOptions;
using retrieval::RunFiles;
using retrieval::apply_gemm_precision;
using retrieval::parse_ranker;
using retrieval::print_search_result;
using retrieval::require_run_device;
using retrieval::run_eval;
using retrieval::run_index;
using retrieval::run_pretrain;
using retrieval::run_train;
using retrieval::search_passage_index;
using retrieval::validate_run_config;
namespace fs = std::filesystem;

namespace {

// The prompt flags given on `command`'s line: eval reads with them in place of the checkpoint's.
PromptOverride prompts_given(const CLI::App& command, const RunConfig& config) {
    PromptOverride prompts;
    if (command.get_option("--query-prompt")->count() > 0) prompts.query_prompt = config.query_prompt;
    if (command.get_option("--passage-prompt")->count() > 0) prompts.passage_prompt = config.passage_prompt;
    return prompts;
}

// index and search read with the prompts the model was saved with; a prompt flag there
// would go unused, so it is left out of their help and refused.
void hide_prompt_flags(CLI::App& command) {
    for (const char* flag : {"--query-prompt", "--passage-prompt"}) command.get_option(flag)->group("");
}
void refuse_prompt_flags(const CLI::App& command, const char* name, const char* source) {
    for (const char* flag : {"--query-prompt", "--passage-prompt"})
        NCE_CHECK(command.get_option(flag)->count() == 0, "{}: {} does not apply: the prompts come from {} (set them "
                  "when training; eval takes others to compare)", name, flag, source);
}

}  // namespace

CLI::App* add_retrieval_subcommands(CLI::App& parent, const RetrievalApp& app, int& exit_code) {
    CLI::App* command = parent.add_subcommand(app.name, app.description);
    command->require_subcommand(0, 1);
    // RunConfig's flags and the app's own on `where`; the function returned resolves them:
    // `over_run` takes the run's config.json under the flags (eval, index), `trains` as in
    // RetrievalApp::add_own_options.
    using Resolver = std::function<RunConfig(bool over_run, bool trains, const std::string& checkpoint)>;
    auto add_options = [&app](CLI::App& where) -> Resolver {
        auto options = std::make_shared<RunConfigOptions>();
        options->add_to(where, app.defaults);
        RetrievalApp::OwnOptions own = app.add_own_options ? app.add_own_options(where) : nullptr;
        return [options, own](bool over_run, bool trains, const std::string& checkpoint) {
            RunConfig config = over_run ? options->resolve_over_run(checkpoint) : options->resolve();
            require_run_device(config);  // before the app's own flags are read (nce train's --train files)
            apply_gemm_precision(config.gemm_precision, Device::CPU);
            if (own) {
                own(config, *options, trains);
                validate_run_config(config);
            }
            return config;
        };
    };

    // `nce <app>` alone, or `nce <app> train`: the whole run.
    Resolver direct = add_options(*command);
    if (app.name != "train") {
        CLI::App* train = command->add_subcommand("train", "train on the data, evaluate against BM25, write the run's files");
        Resolver train_options = add_options(*train);
        train->callback([app, train_options, &exit_code] {
            run_train(app, train_options(false, true, {}));
            exit_code = 0;
        });
    }

    CLI::App* pretrain = command->add_subcommand(
        "pretrain", "pretrain on the corpus alone (imitating BM25), from scratch or from --init FOLDER, evaluate, write the "
        "model for train --init");
    Resolver pretrain_options = add_options(*pretrain);
    pretrain->callback([app, pretrain_options, &exit_code] {
        run_pretrain(app, pretrain_options(false, true, {}));
        exit_code = 0;
    });

    CLI::App* evaluate = command->add_subcommand("eval", "evaluate a trained model on the test split beside BM25 and the hybrid");
    Resolver eval_options = add_options(*evaluate);
    auto eval_checkpoint = std::make_shared<std::string>();
    auto eval_versus = std::make_shared<std::string>();
    evaluate->add_option("--checkpoint", *eval_checkpoint, "model checkpoint, or a sentence-transformers or Hugging "
                         "Face model folder (default: <output>/model.safetensors)");
    evaluate->add_option("--versus", *eval_versus, "a second model (checkpoint or folder; it reads with its own "
                         "tokenizer) scored beside it on the same queries, with the paired test of the two");
    evaluate->callback([app, evaluate, eval_options, eval_checkpoint, eval_versus, &exit_code] {
        RunConfig config = eval_options(true, false, *eval_checkpoint);
        run_eval(app, config, *eval_checkpoint, prompts_given(*evaluate, config), *eval_versus);
        exit_code = 0;
    });

    CLI::App* index = command->add_subcommand("index", "encode every passage (chunked with overlap) into a FAISS index folder");
    Resolver index_options = add_options(*index);
    auto index_checkpoint = std::make_shared<std::string>();
    auto index_folder = std::make_shared<std::string>();
    index->add_option("--checkpoint", *index_checkpoint, "model checkpoint (default: <output>/model.safetensors)");
    index->add_option("--index", *index_folder, "index folder to write (default: <output>/index)");
    hide_prompt_flags(*index);
    index->callback([app, index, index_options, index_checkpoint, index_folder, &exit_code] {
        refuse_prompt_flags(*index, "index", "the checkpoint's config");
        run_index(app, index_options(true, false, *index_checkpoint), *index_checkpoint, *index_folder);
        exit_code = 0;
    });

    // search reads an index folder, not the data: its own few flags, not the training settings.
    CLI::App* search = command->add_subcommand("search", "print the passages of an index nearest to a query");
    auto search_output = std::make_shared<std::string>(app.defaults.output);
    auto search_top_k = std::make_shared<int64_t>(app.defaults.top_k);
    auto search_folder = std::make_shared<std::string>();
    auto search_query = std::make_shared<std::string>();
    auto search_ranker = std::make_shared<std::string>("dense");
    auto search_prompts = std::make_shared<std::pair<std::string, std::string>>();
    search->add_option("--output", *search_output, "the run's folder, whose index/ is searched")->capture_default_str();
    search->add_option("--index", *search_folder, "index folder (default: <output>/index)");
    search->add_option("--top-k", *search_top_k, "results to print")->capture_default_str()->check(CLI::Range(1, 10000));
    search->add_option("--ranker", *search_ranker, "dense (the model), bm25, or hybrid (the run's fusion of the two "
                       "at the weight it chose on validation)")
        ->capture_default_str()
        ->check(CLI::IsMember({"dense", "bm25", "hybrid"}));
    search->add_option("--query-prompt", search_prompts->first);  // refused below: the index's model has its own
    search->add_option("--passage-prompt", search_prompts->second);
    search->add_option("query", *search_query, "the query, in quotes")->required();
    hide_prompt_flags(*search);
    // search_prompts rides in the callback so that CLI11, which writes a given flag into it, never
    // writes into freed memory once this function returns.
    search->callback([app, search, search_output, search_top_k, search_folder, search_query, search_ranker,
                      search_prompts, &exit_code] {
        refuse_prompt_flags(*search, "search", "the config of the index's model.safetensors");
        std::string folder = search_folder->empty() ? RunFiles(*search_output).index : *search_folder;
        NCE_CHECK(fs::is_regular_file(fs::path(folder) / "index.json"),
                  "--index {}: not a complete index folder (no index.json); build one with `nce {} index --output {}`",
                  folder, app.name, *search_output);
        print_search_result(search_passage_index(folder, *search_query, *search_top_k, parse_ranker(*search_ranker)));
        exit_code = 0;
    });

    command->callback([app, command, direct, &exit_code] {
        if (!command->get_subcommands().empty()) return;  // a subcommand ran
        run_train(app, direct(false, true, {}));
        exit_code = 0;
    });
    return command;
}

}  // namespace nce::apps
