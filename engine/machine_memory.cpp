#include "engine/machine_memory.h"

#include <fmt/format.h>
#include <fstream>
#include <limits>
#include <sys/resource.h>
#include <unistd.h>

namespace nce {

namespace {

// The bytes this process maps now (its virtual size, /proc/self/statm's first field).
int64_t mapped_bytes() {
    std::ifstream statm("/proc/self/statm");
    int64_t pages = 0;
    if (!(statm >> pages)) return 0;
    return pages * static_cast<int64_t>(sysconf(_SC_PAGESIZE));
}

// cgroup v2's memory.max for this process's group: "max" or a byte count; none when unreadable.
int64_t cgroup_memory_max() {
    std::ifstream group_file("/proc/self/cgroup");
    std::string line, group = "/";
    while (std::getline(group_file, line))
        if (line.rfind("0::", 0) == 0) group = line.substr(3);
    std::ifstream max_file("/sys/fs/cgroup" + (group == "/" ? std::string() : group) + "/memory.max");
    std::string value;
    if (!(max_file >> value) || value == "max") return std::numeric_limits<int64_t>::max();
    try {
        return static_cast<int64_t>(std::stoll(value));
    } catch (...) {
        return std::numeric_limits<int64_t>::max();
    }
}

}  // namespace

std::string format_bytes(double bytes) {
    if (bytes >= 1024.0 * 1024.0 * 1024.0) return fmt::format("{:.1f} GiB", bytes / (1024.0 * 1024.0 * 1024.0));
    return fmt::format("{:.0f} MiB", bytes / (1024.0 * 1024.0));
}

MemoryLimit memory_limit() {
    const int64_t physical = static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<int64_t>(sysconf(_SC_PAGESIZE));
    MemoryLimit limit{physical, "this machine's " + format_bytes(static_cast<double>(physical))};
    const int64_t group = cgroup_memory_max();
    if (group < limit.bytes) limit = {group, "the container's memory limit (cgroup memory.max) of " +
                                                 format_bytes(static_cast<double>(group))};
    const auto process_limit = [&](int resource, const char* name) {
        rlimit current{};
        if (getrlimit(resource, &current) != 0 || current.rlim_cur == RLIM_INFINITY) return;
        const int64_t cap = current.rlim_cur > static_cast<rlim_t>(std::numeric_limits<int64_t>::max())
                                ? std::numeric_limits<int64_t>::max()
                                : static_cast<int64_t>(current.rlim_cur);
        const int64_t left = cap - std::min(cap, mapped_bytes());
        if (left < limit.bytes)
            limit = {left, fmt::format("what is left ({}) under the {} of {}", format_bytes(static_cast<double>(left)),
                                       name, format_bytes(static_cast<double>(cap)))};
    };
    process_limit(RLIMIT_AS, "address-space limit (ulimit -v)");
    process_limit(RLIMIT_DATA, "data limit (ulimit -d)");
    return limit;
}

}  // namespace nce
