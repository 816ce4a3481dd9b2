// The apps' --config files (retrieval/settings/run_config.h), read as `nce korquad train --config
// FILE` reads them: the JSON, every key applied onto the defaults, the values validated.
#include <CLI/CLI.hpp>

#include "retrieval/settings/run_config.h"
#include "fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string& path = nce::fuzz::input_file(data, size, ".json");
    return nce::fuzz::refuse_or_read([&] {
        CLI::App command;
        nce::retrieval::RunConfigOptions options;
        options.add_to(command, nce::retrieval::RunConfig{});
        command.parse(std::vector<std::string>{path, "--config"});  // CLI11 takes the arguments reversed
        options.resolve();
    });
}
