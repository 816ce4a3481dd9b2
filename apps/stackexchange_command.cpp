// nce stackexchange [train|eval|index|search|compare] [flags]: the app of
// retrieval/stackexchange/stackexchange_app.h with the shared retrieval subcommands, and
// compare (retrieval/stackexchange/loss_comparison.h).
#include <fmt/core.h>

#include <memory>

#include "apps/commands.h"
#include "apps/retrieval_subcommands.h"
#include "retrieval/stackexchange/loss_comparison.h"
#include "retrieval/stackexchange/stackexchange_app.h"

namespace nce::apps {

void add_stackexchange_command(CLI::App& app, int& exit_code) {
    static const retrieval::RetrievalApp stackexchange = stackexchange::stackexchange_app();
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
    defaults.max_steps = stackexchange::kCompareSteps;
    defaults.evaluate_every = 200;
    options->add_to(*compare, defaults);
    compare->footer(app_settings);
    compare->callback([options, &exit_code]() {
        stackexchange::run_loss_comparison(stackexchange, options->resolve());
        exit_code = 0;
    });
}

}  // namespace nce::apps
