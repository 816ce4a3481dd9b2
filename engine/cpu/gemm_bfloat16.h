// bfloat16 GEMMs with float32 accumulation: the BFloat16 mode of engine/gemm_precision.h.
//
// In that mode every float32 GEMM of the CPU backend (engine/blas.h, the one entry point
// that matmul, the attention kernels and the fused InfoNCE sweeps all call) computes
//
//   C = alpha · bf16(op(A)) · bf16(op(B)) + beta · C        A, B, C float32 in memory
//
// where bf16(x) rounds each element to bfloat16: float32's sign and 8 exponent bits, 8
// significant bits instead of 24, rounded to nearest with ties to even, so
// |bf16(x) - x| <= 2^-8 |x|. A product of two bfloat16 numbers (16 significant bits) is
// exact in float32; oneDNN's matmul (bf16 x bf16 -> f32) sums them in float32 and applies
// alpha and beta in float32, so apart from the operands' rounding the result carries only
// the float32 rounding of the sum, as in float32 mode.
//
// Whether it is faster than float32 depends on the CPU. It pays where bfloat16 dot products
// (AVX512_BF16's vdpbf16ps, two products per lane) issue as fast as float32 FMAs, which
// doubles the peak (issue 20 reports 472 GFLOP/s from oneDNN on an AMD Zen 5 whose float32
// peak is 441), or where oneDNN finds AMX. Where they issue at half the FMA rate it cannot: on the 2-core Intel Xeon (AVX512_BF16, no AMX) this was written on,
// a register-only loop measured 102 GFLOP/s per core in vdpbf16ps against 202 in float32
// FMAs, and oneDNN's bfloat16 matmul ran at about 90 against OpenBLAS's 165 in sgemm.
//
// How a product runs:
//   - the operands are rounded into dense bfloat16 buffers (round_to_bfloat16, below, in a
//     loop the compiler vectorises: as fast as oneDNN's f32->bf16 reorder on 1.5 M elements,
//     up to 20% slower on 16 M, measured; about 5% of a bfloat16 InfoNCE step), each in its
//     own orientation: oneDNN reads a transposed operand through its strides;
//   - oneDNN runs single-threaded on the calling thread (OpenMP's team size is set to 1
//     around each call: Debian's oneDNN uses OpenMP), and the engine splits C over its
//     oneTBB threads as engine/blas.h does for OpenBLAS, by rows when it can (the shared
//     op(B) is rounded once, each thread rounds its own rows of op(A)), else by columns;
//     one pool serves loops and GEMMs, and each element of C is summed by one
//     single-threaded call: the same inputs and thread count give the same bits;
//   - a oneDNN primitive costs far more to make than a small product to run, so each is
//     made once per shape (m, n, k, transposes, alpha, beta) and kept. oneDNN's fast
//     kernels (brgemm) want dense operands and a dense C, and alpha and beta fixed when the
//     primitive is made; a C with a larger row stride is computed into a dense buffer and
//     stored with beta by hand.
#pragma once
#include <bit>
#include <cstdint>

namespace nce::cpu {

// x rounded to bfloat16 (its upper 16 bits), to nearest with ties to even: add half a
// bfloat16 ulp (0x7fff) plus the kept last bit, then drop the low 16 bits. A carry into the
// exponent is the correct rounding up; past the largest bfloat16 it gives infinity. NaN
// stays NaN (made quiet, so the rounding cannot turn it into infinity).
inline uint16_t round_to_bfloat16(float x) {
    uint32_t bits = std::bit_cast<uint32_t>(x);
    if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x0040u);
    bits += 0x7fffu + ((bits >> 16) & 1u);
    return static_cast<uint16_t>(bits >> 16);
}

inline float bfloat16_to_float(uint16_t h) { return std::bit_cast<float>(static_cast<uint32_t>(h) << 16); }

// The BFloat16 mode of blas_gemm and blas_gemm_on_this_thread<float> (same arguments,
// engine/blas.h): split over the engine's threads, and on the calling thread alone.
void bfloat16_gemm(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                   int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
void bfloat16_gemm_on_this_thread(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, float alpha,
                                  const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                                  int64_t ldc);

// Throws nce::Error, naming the way back to float32, when oneDNN cannot make a bfloat16
// matmul on this CPU.
void check_bfloat16_gemm_available();

}  // namespace nce::cpu
