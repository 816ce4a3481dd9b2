#include "engine/cuda/profile.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace nce::cuda::profile {
namespace {

struct Counters {
    std::atomic<int64_t> launches{0}, gemms{0}, uploads{0}, readbacks{0}, device_copies{0};
};

Counters& counters() {
    static Counters* made = new Counters();  // lives until exit, read by the report below
    return *made;
}

struct KernelTime {
    int64_t launches = 0;
    double milliseconds = 0;
};

// Kernel times by body name, and the report printed at exit when profiling is on.
struct Report {
    std::mutex mutex;
    std::map<std::string, KernelTime> kernels;
    ~Report() {
        if (!enabled()) return;
        std::fprintf(stderr, "cuda profile: %s\n", describe(counts()).c_str());
        std::vector<std::pair<std::string, KernelTime>> rows(kernels.begin(), kernels.end());
        std::sort(rows.begin(), rows.end(),
                  [](const auto& a, const auto& b) { return a.second.milliseconds > b.second.milliseconds; });
        for (const auto& [body, time] : rows)
            std::fprintf(stderr, "cuda profile: %10.3f ms %8lld launches  %s\n", time.milliseconds,
                         static_cast<long long>(time.launches), body.c_str());
    }
};

Report& report() {
    static Report made;
    return made;
}

std::string plural(int64_t n, const char* one, const char* many) { return fmt::format("{} {}", n, n == 1 ? one : many); }

}  // namespace

Counts counts() {
    Counters& c = counters();
    return {c.launches.load(), c.gemms.load(), c.uploads.load(), c.readbacks.load(), c.device_copies.load()};
}

void reset() {
    Counters& c = counters();
    c.launches = 0;
    c.gemms = 0;
    c.uploads = 0;
    c.readbacks = 0;
    c.device_copies = 0;
}

void count_launch() {
    counters().launches.fetch_add(1, std::memory_order_relaxed);
    if (enabled()) report();  // made before the first launch, so it is destroyed after the counters' last use
}
void count_gemm() { counters().gemms.fetch_add(1, std::memory_order_relaxed); }
void count_upload() { counters().uploads.fetch_add(1, std::memory_order_relaxed); }
void count_readback() { counters().readbacks.fetch_add(1, std::memory_order_relaxed); }
void count_device_copy() { counters().device_copies.fetch_add(1, std::memory_order_relaxed); }

bool enabled() {
    static const bool on = [] {
        const char* value = std::getenv("NCE_CUDA_PROFILE");
        return value != nullptr && *value != '\0' && std::string(value) != "0";
    }();
    return on;
}

void add_kernel_time(const char* body, double milliseconds) {
    Report& r = report();
    std::lock_guard<std::mutex> lock(r.mutex);
    KernelTime& time = r.kernels[body];
    time.launches += 1;
    time.milliseconds += milliseconds;
}

std::string describe(const Counts& c) {
    return fmt::format("{}, {}, {}, {}, {}", plural(c.launches, "launch", "launches"),
                       plural(c.gemms, "cuBLAS call", "cuBLAS calls"), plural(c.uploads, "upload", "uploads"),
                       plural(c.readbacks, "read-back", "read-backs"),
                       plural(c.device_copies, "device copy", "device copies"));
}

}  // namespace nce::cuda::profile
