// PLACEHOLDER: being written.
#include "apps/commands.h"

namespace nce::apps {

void add_bench_loss_command(CLI::App& app, int& exit_code) { (void)app; (void)exit_code; }

}  // namespace nce::apps
