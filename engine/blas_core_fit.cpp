#include "engine/blas_core_fit.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "engine/threads.h"

namespace nce {
namespace {

bool same_name(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
           });
}

// The core OPENBLAS_CORETYPE would name for kernels of each width.
std::string_view core_for(VectorIsa isa) {
    switch (isa) {
        case VectorIsa::Avx512: return "SkylakeX";
        case VectorIsa::Avx2: return "Haswell";
        case VectorIsa::Avx: return "Sandybridge";
        case VectorIsa::Sse: return "Prescott";
    }
    return "Prescott";
}

}  // namespace

std::string_view vector_isa_name(VectorIsa isa) {
    switch (isa) {
        case VectorIsa::Avx512: return "AVX-512";
        case VectorIsa::Avx2: return "AVX2";
        case VectorIsa::Avx: return "AVX";
        case VectorIsa::Sse: return "SSE";
    }
    return "SSE";
}

VectorIsa cpu_vector_isa() {
#if defined(__x86_64__)
    // libgcc's checks include the OS's (XCR0): a feature the kernel does not save is absent.
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl"))
        return VectorIsa::Avx512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return VectorIsa::Avx2;
    if (__builtin_cpu_supports("avx")) return VectorIsa::Avx;
#endif
    return VectorIsa::Sse;
}

VectorIsa blas_core_isa(std::string_view core) {
    // OpenBLAS 0.3.21's x86-64 core names, by the widest instructions their kernels use.
    for (std::string_view name : {"SkylakeX", "Cooperlake", "SapphireRapids"})
        if (same_name(core, name)) return VectorIsa::Avx512;
    for (std::string_view name : {"Haswell", "Zen", "Excavator"})
        if (same_name(core, name)) return VectorIsa::Avx2;
    for (std::string_view name : {"Sandybridge", "Bulldozer", "Piledriver", "Steamroller"})
        if (same_name(core, name)) return VectorIsa::Avx;
    return VectorIsa::Sse;
}

std::string blas_core_mismatch(std::string_view core, VectorIsa cpu, const char* coretype) {
    const VectorIsa used = blas_core_isa(core);
    if (used >= cpu) return "";
    const bool forced = coretype != nullptr && *coretype != '\0';
    return fmt::format(
        "OpenBLAS runs its {} kernels ({}) on a CPU with {} ({}): float32 GEMMs run below the CPU's width; set "
        "OPENBLAS_CORETYPE={} {}",
        core, vector_isa_name(used), vector_isa_name(cpu),
        forced ? fmt::format("OPENBLAS_CORETYPE={} chose them", coretype) : std::string("it does not know this CPU"),
        core_for(cpu), forced ? "or unset it" : "or install a newer OpenBLAS");
}

std::string blas_core_mismatch() {
    return blas_core_mismatch(blas_core_name(), cpu_vector_isa(), std::getenv("OPENBLAS_CORETYPE"));
}

}  // namespace nce
