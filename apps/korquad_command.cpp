// nce korquad [train|eval|index|search]: question -> paragraph retrieval on KorQuAD 1.0, the
// app of retrieval/korquad/korquad_app.h with the shared retrieval subcommands.
#include "apps/commands.h"
#include "apps/retrieval_subcommands.h"
#include "retrieval/korquad/korquad_app.h"

namespace nce::apps {

void add_korquad_command(CLI::App& app, int& exit_code) {
    add_retrieval_subcommands(app, korquad::korquad_app(), exit_code);
}

}  // namespace nce::apps
