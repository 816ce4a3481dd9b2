// How much memory this process may still take: the least of the machine's physical memory,
// the cgroup's memory.max (a container's limit) and the address-space and data limits
// (`ulimit -v`, `ulimit -d`), the last two less what the process already maps. What would
// not fit in it is refused before it is allocated, with one line, rather than found out as a
// bad_alloc half way through a run.
//
//   MemoryLimit limit = memory_limit();   // {bytes: 25.2e9, what: "this machine's 23.5 GiB"}
#pragma once
#include <cstdint>
#include <string>

namespace nce {

struct MemoryLimit {
    int64_t bytes = 0;  // what is left under the tightest limit
    std::string what;   // which limit, in words, with its size: "the address-space limit (ulimit -v) of 1.0 GiB"
};

MemoryLimit memory_limit();

// "1.5 GiB", "320 MiB": bytes for a message.
std::string format_bytes(double bytes);

}  // namespace nce
