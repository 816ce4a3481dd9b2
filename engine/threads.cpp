#include "engine/threads.h"

#include <cblas.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <tbb/global_control.h>

#include "engine/error.h"

namespace nce {
namespace {

std::mutex thread_mutex;
std::atomic<int> thread_count{0};  // 0 = not yet decided
std::unique_ptr<tbb::global_control> tbb_limit;

void apply(int threads) {
    tbb_limit = std::make_unique<tbb::global_control>(tbb::global_control::max_allowed_parallelism,
                                                      static_cast<size_t>(threads));
    openblas_set_num_threads(1);  // the engine splits GEMMs over its own threads (engine/blas.h)
    thread_count.store(threads, std::memory_order_release);
}

}  // namespace

int num_threads() {
    if (int known = thread_count.load(std::memory_order_acquire); known > 0) return known;
    std::lock_guard lock(thread_mutex);
    if (thread_count.load() == 0) {
        int threads = static_cast<int>(std::thread::hardware_concurrency());
        if (threads <= 0) threads = 1;
        if (const char* env = std::getenv("NCE_NUM_THREADS"); env != nullptr && *env != '\0') {
            char* end = nullptr;
            long value = std::strtol(env, &end, 10);
            NCE_CHECK(*end == '\0' && value >= 1 && value <= 4096,
                      "NCE_NUM_THREADS='{}' is not a thread count: set it to a whole number >= 1", env);
            threads = static_cast<int>(value);
        }
        apply(threads);
    }
    return thread_count;
}

void set_num_threads(int threads) {
    NCE_CHECK(threads >= 1, "set_num_threads: thread count must be >= 1, got {}", threads);
    std::lock_guard lock(thread_mutex);
    apply(threads);
}

const char* blas_core_name() { return openblas_get_corename(); }

}  // namespace nce
