// Placeholder: replaced by the command's implementation.
#include "apps/commands.h"

namespace nce::apps {

void add_data_command(CLI::App&, int&) {}

}  // namespace nce::apps
