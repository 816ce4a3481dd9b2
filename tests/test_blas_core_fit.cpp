// Whether OpenBLAS's kernels are as wide as the CPU (engine/blas_core_fit.h): the rule on
// named cores, and this process's own answer when OPENBLAS_CORETYPE forces a fallback.
#include <cstdlib>
#include <string>

#include "tests/test_helpers.h"

using namespace nce;

TEST_CASE("blas core fit: each OpenBLAS core is known by the widest instructions of its kernels") {
    CHECK(blas_core_isa("SkylakeX") == VectorIsa::Avx512);
    CHECK(blas_core_isa("cooperlake") == VectorIsa::Avx512);
    CHECK(blas_core_isa("Haswell") == VectorIsa::Avx2);
    CHECK(blas_core_isa("Zen") == VectorIsa::Avx2);
    CHECK(blas_core_isa("Sandybridge") == VectorIsa::Avx);
    CHECK(blas_core_isa("Prescott") == VectorIsa::Sse);
    CHECK(blas_core_isa("a core of a later OpenBLAS") == VectorIsa::Sse);
}

TEST_CASE("blas core fit: kernels narrower than the CPU are one line with the fix, matching ones nothing") {
    CHECK(blas_core_mismatch("SkylakeX", VectorIsa::Avx512, nullptr).empty());
    CHECK(blas_core_mismatch("Haswell", VectorIsa::Avx2, nullptr).empty());
    CHECK(blas_core_mismatch("SkylakeX", VectorIsa::Avx2, nullptr).empty());  // wider than needed is not ours to judge

    // OpenBLAS 0.3.21 on Zen 4 and Zen 5: Haswell's AVX2 kernels on an AVX-512 CPU.
    std::string zen5 = blas_core_mismatch("Haswell", VectorIsa::Avx512, nullptr);
    CHECK(zen5 ==
          "OpenBLAS runs its Haswell kernels (AVX2) on a CPU with AVX-512 (it does not know this CPU): float32 GEMMs run "
          "below the CPU's width; set OPENBLAS_CORETYPE=SkylakeX or install a newer OpenBLAS");
    // The fallback the environment asked for is named as the cause.
    std::string forced = blas_core_mismatch("Prescott", VectorIsa::Avx2, "Prescott");
    CHECK(forced.find("OPENBLAS_CORETYPE=Prescott chose them") != std::string::npos);
    CHECK(forced.find("set OPENBLAS_CORETYPE=Haswell or unset it") != std::string::npos);
    CHECK(forced.find('\n') == std::string::npos);
}

TEST_CASE("blas core fit: this process's core, forced to Prescott where the CPU has more") {
    // OpenBLAS reads OPENBLAS_CORETYPE once, at load; meson runs this binary with it set to
    // Prescott (tests/meson.build), so the fallback is real here, not simulated.
    const char* coretype = std::getenv("OPENBLAS_CORETYPE");
    if (coretype == nullptr || std::string(coretype) != "Prescott" || cpu_vector_isa() == VectorIsa::Sse) {
        MESSAGE("skipped: needs OPENBLAS_CORETYPE=Prescott on a CPU with AVX or more");
        return;
    }
    CHECK(std::string(blas_core_name()) == "Prescott");
    std::string note = blas_core_mismatch();
    CHECK(note.find("OpenBLAS runs its Prescott kernels (SSE)") != std::string::npos);
    CHECK(note.find("OPENBLAS_CORETYPE=Prescott chose them") != std::string::npos);
}
