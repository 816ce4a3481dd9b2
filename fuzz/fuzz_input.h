// What every fuzz target shares (fuzz/README.md):
// - the input as a file, since the readers take paths: one scratch file per process,
//   rewritten for every input and removed at exit;
// - the rule that a reader may refuse bytes only with nce::Error (one line naming the file
//   and the problem). Anything else escaping, a crash, a sanitizer report, a hang or an
//   allocation past the limits (scripts/fuzz.sh: 2 GiB, 5 s per input) is a finding.
#pragma once
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <string_view>

#include "engine/error.h"

namespace nce::fuzz {

inline std::string& scratch_path() {
    static std::string path;
    return path;
}

// The input's bytes in this process's scratch file, named with `extension` (".npy", ...).
inline const std::string& input_file(const uint8_t* data, size_t size, const char* extension) {
    std::string& path = scratch_path();
    if (path.empty()) {
        path = "/tmp/nce-fuzz-" + std::to_string(::getpid()) + extension;
        std::atexit([] { std::remove(scratch_path().c_str()); });
    }
    std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data),
                                                                   static_cast<std::streamsize>(size));
    return path;
}

inline std::string_view input_text(const uint8_t* data, size_t size) {
    return {reinterpret_cast<const char*>(data), size};
}

// The first refusal since the replay cleared it (before each input), "" when every read
// succeeded: a target that reads strictly, then leniently, reports the strict refusal.
inline std::string& first_refusal() {
    static std::string message;
    return message;
}

// Runs `read`; a refusal (nce::Error) is an answer, not a finding.
template <typename Read>
int refuse_or_read(Read&& read) {
    try {
        read();
    } catch (const nce::Error& error) {
        if (first_refusal().empty()) first_refusal() = error.what();
    }
    return 0;
}

}  // namespace nce::fuzz
