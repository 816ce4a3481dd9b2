// Replays saved inputs through one fuzz target without libFuzzer, so that every build (the
// release build with g++, and the sanitizer build) runs the seed corpus and every input that
// ever failed (fuzz/regressions/) as part of `meson test`.
// Usage: TARGET_replay DIR_OR_FILE...   Exit 0 when every input was read or refused cleanly;
// a finding aborts (a sanitizer report, an uncaught exception) and names the input first.
// Two more rules hold here, for the inputs saved by hand after a class of hostile input was
// fixed: an input whose name starts with "refused-" must be refused (it was once accepted
// silently), and every refusal is one short line: no control character (a newline or an
// escape copied from the file) and at most 500 bytes (an error quoting a 1 MB header).
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

// At most 500 bytes and no control character (tab aside).
bool one_short_line(const std::string& message) {
    if (message.size() > 500) return false;
    for (unsigned char c : message)
        if ((c < 0x20 && c != '\t') || c == 0x7f) return false;
    return true;
}

}  // namespace

int main(int argc, char** argv) {
    namespace fs = std::filesystem;
    std::vector<fs::path> inputs;
    for (int i = 1; i < argc; ++i) {
        fs::path path = argv[i];
        if (fs::is_directory(path)) {
            for (const auto& entry : fs::directory_iterator(path))
                if (entry.is_regular_file() && entry.path().filename() != ".gitkeep") inputs.push_back(entry.path());
        } else if (fs::is_regular_file(path)) {
            inputs.push_back(path);
        } else {
            std::fprintf(stderr, "replay: %s is neither a file nor a folder\n", argv[i]);
            return 2;
        }
    }
    int findings = 0;
    for (const fs::path& input : inputs) {
        std::ifstream file(input, std::ios::binary);
        std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
        std::printf("replay: %s (%zu bytes) ... ", input.c_str(), bytes.size());
        std::fflush(stdout);  // a finding aborts below: the input's name is already out
        nce::fuzz::first_refusal().clear();
        LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
        const std::string& refusal = nce::fuzz::first_refusal();
        std::printf("%s%s\n", refusal.empty() ? "read" : "refused: ", refusal.c_str());
        if (refusal.empty() && input.filename().string().rfind("refused-", 0) == 0) {
            std::printf("replay: FINDING: %s was read; its name says it must be refused\n", input.c_str());
            ++findings;
        }
        if (!one_short_line(refusal)) {
            std::printf("replay: FINDING: the refusal of %s is not one short line (%zu bytes)\n", input.c_str(),
                        refusal.size());
            ++findings;
        }
    }
    std::printf("replay: %zu inputs, %d findings\n", inputs.size(), findings);
    return findings == 0 ? 0 : 1;
}
