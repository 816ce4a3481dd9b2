// nce: the command-line tool. Every error reaches the user as one line and a non-zero exit.
#include <fmt/core.h>

#include <CLI/CLI.hpp>

#include "apps/commands.h"

int main(int argc, char** argv) {
    CLI::App app{"nce: an autograd engine for contrastive learning, with every gradient derived by hand and proved"};
    app.require_subcommand(1);
    int exit_code = 0;
    nce::apps::add_gradcheck_command(app, exit_code);
    nce::apps::add_loss_command(app, exit_code);
    nce::apps::add_encode_command(app, exit_code);
    nce::apps::add_data_command(app, exit_code);
    nce::apps::add_korquad_command(app, exit_code);
    nce::apps::add_stackexchange_command(app, exit_code);
    nce::apps::add_code_command(app, exit_code);
    nce::apps::add_bench_command(app, exit_code);
    try {
        app.parse(argc, argv);  // runs the chosen subcommand
    } catch (const CLI::ParseError& error) {
        return app.exit(error);
    } catch (const std::exception& error) {
        fmt::print(stderr, "nce: error: {}\n", error.what());
        return 1;
    }
    return exit_code;
}
