// The precision float32 GEMMs compute in: one setting for the whole engine, like the thread
// count (engine/threads.h).
//
//   Float32 (the default): OpenBLAS's sgemm, float32 operands, float32 accumulation.
//   BFloat16: each operand is rounded to bfloat16 (round to nearest, ties to even) and oneDNN
//     multiplies them with float32 accumulation and a float32 result
//     (engine/cpu/gemm_bfloat16.h).
//
// Only the CPU backend's GEMMs change (the CUDA backend's cuBLAS products stay float32):
// everything around them (softmax, layer norm, the losses' reductions, optimizer state,
// master weights) stays float32, and float64 GEMMs are never touched. It comes from NCE_GEMM_PRECISION (float32 or bfloat16; default float32) the
// first time anything asks, or from set_gemm_precision().
#pragma once
#include <string>

namespace nce {

enum class GemmPrecision { Float32, BFloat16 };

GemmPrecision gemm_precision();
// BFloat16 checks first that oneDNN can make a bfloat16 matmul on this CPU (one clear error
// naming the way back to float32 when it cannot).
void set_gemm_precision(GemmPrecision precision);

const char* gemm_precision_name(GemmPrecision precision);  // "float32" / "bfloat16"
// "float32" / "bfloat16" -> GemmPrecision; throws nce::Error naming the accepted values otherwise.
GemmPrecision parse_gemm_precision(const std::string& name);

// The instruction set oneDNN chose for this CPU as it names it (e.g. "avx512_core_bf16",
// "avx512_core_amx"), and the implementation it picks for a bfloat16 matmul (e.g.
// "brg:avx512_core_bf16"): what a benchmark reports beside its bfloat16 figures.
const char* onednn_cpu_isa();
std::string bfloat16_gemm_implementation();

// Sets a precision for the lifetime of the object and restores the previous one after.
class GemmPrecisionScope {
public:
    explicit GemmPrecisionScope(GemmPrecision precision) : previous_(gemm_precision()) {
        set_gemm_precision(precision);
    }
    ~GemmPrecisionScope() { set_gemm_precision(previous_); }
    GemmPrecisionScope(const GemmPrecisionScope&) = delete;
    GemmPrecisionScope& operator=(const GemmPrecisionScope&) = delete;

private:
    GemmPrecision previous_;
};

}  // namespace nce
