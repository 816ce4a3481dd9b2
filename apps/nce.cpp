// nce: the command-line tool. Every error reaches the user as one line and a non-zero exit.
#include <fmt/core.h>

#include <cstdio>

#include <CLI/CLI.hpp>

#include "apps/commands.h"
#include "apps/parse_error.h"
#include "distributed/world.h"
#include "engine/message_text.h"
#ifdef NCE_HAVE_CUDA
#include "engine/cuda/cuda_backend.h"
#endif

int main(int argc, char** argv) {
    // Under `mpirun -np K nce ...` every process joins the world here (distributed/world.h);
    // started alone, nce is a world of one process and this does nothing.
    nce::distributed::WorldSession world_session(argc, argv);
    // Only rank 0 prints results and progress; the others' errors still reach stderr.
    if (!nce::distributed::is_main_rank()) std::freopen("/dev/null", "w", stdout);
#ifdef NCE_HAVE_CUDA
    // The CUDA backend, when this machine has a GPU; otherwise the reason is kept, and a
    // command given --device cuda prints it (retrieval/settings/device_name.h). One device count, no context.
    nce::cuda::install_backend();
#endif
    CLI::App app{"nce: an autograd engine for contrastive learning, with every gradient derived by hand and proved"};
    app.require_subcommand(1);
    int exit_code = 0;
    nce::apps::add_gradcheck_command(app, exit_code);
    nce::apps::add_loss_command(app, exit_code);
    nce::apps::add_explain_command(app, exit_code);
    nce::apps::add_graph_command(app, exit_code);
    nce::apps::add_encode_command(app, exit_code);
    nce::apps::add_convert_command(app, exit_code);
    nce::apps::add_data_command(app, exit_code);
    nce::apps::add_korquad_command(app, exit_code);
    nce::apps::add_stackexchange_command(app, exit_code);
    nce::apps::add_code_command(app, exit_code);
    nce::apps::add_train_command(app, exit_code);
    nce::apps::add_mine_command(app, exit_code);
    nce::apps::add_bench_command(app, exit_code);
    try {
        app.parse(argc, argv);  // runs the chosen subcommand
    } catch (const CLI::CallForHelp& help) {
        return app.exit(help);
    } catch (const CLI::CallForAllHelp& help) {
        return app.exit(help);
    } catch (const CLI::CallForVersion& version) {
        return app.exit(version);
    } catch (const CLI::ParseError& error) {
        fmt::print(stderr, "nce: error: {}\n", nce::one_line_message(nce::apps::parse_error_line(app, error)));
        return 2;
    } catch (const std::exception& error) {
        // With several processes, one rank's error ends them all (MPI_Abort): none is left
        // waiting in a collective for it.
        // Whatever the message quotes from a file is escaped and bounded here, so it is one line.
        const std::string line = nce::one_line_message(error.what());
        if (nce::distributed::world().size() > 1) nce::distributed::abort_world(line);
        fmt::print(stderr, "nce: error: {}\n", line);
        return 1;
    }
    return exit_code;
}
