#include "engine/gemm_precision.h"

#include <atomic>
#include <cstdlib>
#include <mutex>

#include "engine/cpu/gemm_bfloat16.h"
#include "engine/error.h"

namespace nce {
namespace {

std::mutex precision_mutex;
std::atomic<int> precision{-1};  // -1 = not yet decided, else a GemmPrecision

void apply(GemmPrecision chosen) {
    if (chosen == GemmPrecision::BFloat16) cpu::check_bfloat16_gemm_available();
    precision.store(static_cast<int>(chosen), std::memory_order_release);
}

}  // namespace

GemmPrecision gemm_precision() {
    if (int known = precision.load(std::memory_order_acquire); known >= 0) return static_cast<GemmPrecision>(known);
    std::lock_guard lock(precision_mutex);
    if (precision.load() < 0) {
        GemmPrecision chosen = GemmPrecision::Float32;
        if (const char* env = std::getenv("NCE_GEMM_PRECISION"); env != nullptr && *env != '\0') {
            NCE_CHECK(std::string(env) == "float32" || std::string(env) == "bfloat16",
                      "NCE_GEMM_PRECISION='{}' is not a GEMM precision: set it to float32 or bfloat16", env);
            chosen = parse_gemm_precision(env);
        }
        apply(chosen);
    }
    return static_cast<GemmPrecision>(precision.load());
}

void set_gemm_precision(GemmPrecision chosen) {
    std::lock_guard lock(precision_mutex);
    apply(chosen);
}

const char* gemm_precision_name(GemmPrecision chosen) {
    return chosen == GemmPrecision::BFloat16 ? "bfloat16" : "float32";
}

GemmPrecision parse_gemm_precision(const std::string& name) {
    if (name == "float32") return GemmPrecision::Float32;
    if (name == "bfloat16") return GemmPrecision::BFloat16;
    fail("unknown GEMM precision '{}': use float32 or bfloat16", name);
}

}  // namespace nce
