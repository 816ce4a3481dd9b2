// Whether OpenBLAS's kernels use the vector instructions this CPU has.
//
// OpenBLAS picks its kernels at start-up from the CPU it recognises (or from
// OPENBLAS_CORETYPE). A CPU newer than the library is not recognised and gets an older core's
// kernels: Debian 12's OpenBLAS 0.3.21 runs Haswell's AVX2 kernels on AMD Zen 4 and Zen 5,
// and can fall back to Prescott's SSE3 ones, so float32 GEMMs run at half the CPU's width or
// less. blas_core_mismatch() says so in one line with the fix; the retrieval runs print it
// before training and `nce bench` records it beside "blas_core".
#pragma once
#include <string>
#include <string_view>

namespace nce {

// The widest float vector instructions in use: what a CPU (and its OS) offers, or what an
// OpenBLAS core's kernels are written with.
enum class VectorIsa { Sse, Avx, Avx2, Avx512 };

std::string_view vector_isa_name(VectorIsa isa);  // "SSE", "AVX", "AVX2", "AVX-512"

VectorIsa cpu_vector_isa();                       // this CPU's, as the OS enables it
VectorIsa blas_core_isa(std::string_view core);  // e.g. "Haswell" -> AVX2 (unknown names: SSE)

// Empty when the core's kernels are as wide as the CPU; otherwise one line naming the core, the
// CPU's instructions and the fix (`coretype` is OPENBLAS_CORETYPE, nullptr when unset).
std::string blas_core_mismatch(std::string_view core, VectorIsa cpu, const char* coretype);

// The same for this process: OpenBLAS's chosen core on this CPU.
std::string blas_core_mismatch();

}  // namespace nce
