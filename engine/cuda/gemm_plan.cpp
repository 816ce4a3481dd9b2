#include "engine/cuda/gemm_plan.h"

#include <algorithm>

namespace nce::cuda {

GemmPlan plan_gemm(const RowMajorGemm& g) {
    GemmPlan plan;
    plan.transpose_first = g.transpose_b;
    plan.transpose_second = g.transpose_a;
    plan.rows = g.n;
    plan.cols = g.m;
    plan.depth = g.k;
    // Row lengths of the row-major B [k, n] (or [n, k]), A [m, k] (or [k, m]) and C [m, n];
    // BLAS wants at least 1 even for an empty side.
    plan.ld_first = std::max<int64_t>(1, g.transpose_b ? g.k : g.n);
    plan.ld_second = std::max<int64_t>(1, g.transpose_a ? g.m : g.k);
    plan.ld_out = std::max<int64_t>(1, g.n);
    plan.stride_first = g.b_batched ? g.k * g.n : 0;
    plan.stride_second = g.a_batched ? g.m * g.k : 0;
    plan.stride_out = g.m * g.n;
    plan.batch = g.batch;
    if (g.batch > 1 && g.a_batched && !g.b_batched && !g.transpose_a) {
        // [batch, m, k] · [k, n] = [batch·m, k] · [k, n]: one product, m grows by the batch.
        plan.cols = g.batch * g.m;
        plan.stride_second = plan.stride_out = 0;
        plan.batch = 1;
    }
    return plan;
}

}  // namespace nce::cuda
