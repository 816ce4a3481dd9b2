// `nce <app>` with train, pretrain, eval, index and search, for an app described by a
// retrieval::RetrievalApp (retrieval/run/retrieval_app.h says what each subcommand runs).
#pragma once
#include "retrieval/run/retrieval_app.h"

namespace CLI {
class App;
}  // namespace CLI

namespace nce::apps {

// Adds `nce <app.name>` with train, pretrain, eval, index and search to `parent`; with no
// subcommand it runs train (an app named "train" has no `train` subcommand: `nce train` is
// the run). Returns the app's command so the app can add more (compare).
CLI::App* add_retrieval_subcommands(CLI::App& parent, const retrieval::RetrievalApp& app, int& exit_code);

}  // namespace nce::apps
