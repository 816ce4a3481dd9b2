// The row-major to column-major GEMM plan (engine/cuda/gemm_plan.h): its arguments for
// known cases, and the CUDA backend's gemm through it against the CPU backend's gemm over
// all four transpose cases, 2-D, batched, a shared 2-D operand on either side, odd sizes,
// alpha and beta, float32 and float64.
#include <doctest/doctest.h>

#include "engine/cuda/gemm_plan.h"
#include "tests/cuda_parity_harness.h"

using namespace nce;
using namespace nce::testing;
using nce::cuda::GemmPlan;
using nce::cuda::plan_gemm;
using nce::cuda::RowMajorGemm;

TEST_CASE("gemm plan: row-major A·B is column-major B·A with the transposes and row lengths kept") {
    // C [3, 5] = A [3, 7] · B^T, B [5, 7]
    GemmPlan plan = plan_gemm({.batch = 1, .m = 3, .n = 5, .k = 7, .transpose_a = false, .transpose_b = true});
    CHECK(plan.transpose_first);      // B^T
    CHECK_FALSE(plan.transpose_second);
    CHECK(plan.rows == 5);            // C^T [5, 3]
    CHECK(plan.cols == 3);
    CHECK(plan.depth == 7);
    CHECK(plan.ld_first == 7);        // B's row length
    CHECK(plan.ld_second == 7);       // A's row length
    CHECK(plan.ld_out == 5);
    CHECK(plan.batch == 1);
}

TEST_CASE("gemm plan: a shared 2-D side has stride 0, and a batched untransposed A folds into one product") {
    // [4, 3, 2] · [2, 6] with A^T: no fold, B shared
    GemmPlan shared_b = plan_gemm({.batch = 4, .m = 3, .n = 6, .k = 2, .transpose_a = true, .transpose_b = false,
                                   .a_batched = true, .b_batched = false});
    CHECK(shared_b.batch == 4);
    CHECK(shared_b.stride_first == 0);
    CHECK(shared_b.stride_second == 6);
    CHECK(shared_b.stride_out == 18);
    // [2, 5] · [4, 5, 6]: A shared
    GemmPlan shared_a = plan_gemm({.batch = 4, .m = 2, .n = 6, .k = 5, .a_batched = false, .b_batched = true});
    CHECK(shared_a.batch == 4);
    CHECK(shared_a.stride_first == 30);
    CHECK(shared_a.stride_second == 0);
    // [4, 3, 2] · [2, 6]: one [12, 2] · [2, 6] product
    GemmPlan folded = plan_gemm({.batch = 4, .m = 3, .n = 6, .k = 2, .a_batched = true, .b_batched = false});
    CHECK(folded.batch == 1);
    CHECK(folded.cols == 12);
    CHECK(folded.rows == 6);
}

namespace {

// One product on both backends: out starts from `initial` (beta · initial is added).
void check_gemm(const Shape& a_shape, bool ta, const Shape& b_shape, bool tb, double alpha, double beta, Dtype dtype) {
    const Tensor a = parity_values(a_shape, 11).to(dtype), b = parity_values(b_shape, 12).to(dtype);
    Shape out_shape = matmul(a, b, ta && tb ? Transpose::Both : ta ? Transpose::First : tb ? Transpose::Second
                                                                                        : Transpose::None)
                          .shape();
    const Tensor initial = parity_values(out_shape, 13).to(dtype);
    Tensor cpu_out = initial.clone();
    backend_for(Device::CPU).gemm(a, ta, b, tb, cpu_out, alpha, beta);
    Tensor cuda_out = initial.to(Device::CUDA);
    backend_for(Device::CUDA).gemm(a.to(Device::CUDA), ta, b.to(Device::CUDA), tb, cuda_out, alpha, beta);
    check_close(cuda_out, cpu_out,
                fmt::format("{}{} · {}{} alpha {} beta {} in {}", shape_string(a_shape), ta ? "^T" : "",
                            shape_string(b_shape), tb ? "^T" : "", alpha, beta, dtype_name(dtype)));
}

// The operand shape of an [rows, cols] matrix, transposed if asked, with an optional batch.
Shape operand(int64_t batch, int64_t rows, int64_t cols, bool transposed) {
    Shape shape = transposed ? Shape{cols, rows} : Shape{rows, cols};
    if (batch > 0) shape.insert(shape.begin(), batch);
    return shape;
}

}  // namespace

TEST_CASE("gemm plan: the CUDA backend's gemm equals the CPU backend's in every form") {
    struct Sizes {
        int64_t m, n, k;
    };
    for (Dtype dtype : {Dtype::Float64, Dtype::Float32})
        for (Sizes s : {Sizes{3, 5, 7}, Sizes{1, 9, 4}, Sizes{13, 1, 3}, Sizes{17, 11, 1}, Sizes{6, 4, 0}})
            for (bool ta : {false, true})
                for (bool tb : {false, true})
                    // batch 0 means 2-D; a_batch / b_batch: 0 = shared 2-D side
                    for (auto [a_batch, b_batch] : {std::pair{0, 0}, {3, 3}, {3, 0}, {0, 3}, {1, 1}})
                        for (auto [alpha, beta] : {std::pair{1.0, 0.0}, {-0.5, 0.75}})
                            check_gemm(operand(a_batch, s.m, s.k, ta), ta, operand(b_batch, s.k, s.n, tb), tb, alpha,
                                       beta, dtype);
}
