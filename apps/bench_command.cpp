// `nce bench`: the engine's side of the benchmarks in benchmarks/, one JSON line per run,
// so that anyone can rerun a figure from the command line.
#include "apps/commands.h"

namespace nce::apps {

void add_bench_command(CLI::App& app, int& exit_code) {
    CLI::App* bench = app.add_subcommand("bench", "Time a loss or a training step; prints one JSON line");
    bench->require_subcommand(1);
    add_bench_loss_command(*bench, exit_code);
    add_bench_step_command(*bench, exit_code);
}

}  // namespace nce::apps
