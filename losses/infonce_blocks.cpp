// The fused, row-blocked InfoNCE kernels (see infonce_blocks.h for the plan of a sweep).
//
// Every pass over a block works row by row (a row of N+M logits stays in L1/L2 while its
// max, exp and sums are taken) and is split over the engine's threads by rows, or by
// columns for the column statistics, so each number is computed by one thread in a fixed
// order: the same inputs and thread count give the same bits. The GEMMs are OpenBLAS's,
// split over the engine's threads (engine/blas.h). Scratch memory (the block,
// the candidates) comes from the caching allocator, so the next step reuses the pages this
// one touched.
#include "losses/infonce_blocks.h"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "engine/blas.h"
#include "engine/cpu/exact_exp.h"

namespace nce::losses {
namespace {

// Every exp below is exact_exp: a logit far below its row's maximum gives exactly 0, never
// a denormal that would reach the gradient (engine/cpu/exact_exp.h).
using cpu::exact_exp;

template <typename T>
using Array = Eigen::Array<T, Eigen::Dynamic, 1>;
template <typename T>
using RowMap = Eigen::Map<Array<T>>;

// C = alpha op(A) op(B) + beta C (engine/blas.h), with explicit leading dimensions, so that
// a block of rows or a range of columns is a pointer and a stride, not a copy.
template <typename T>
void gemm(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, double alpha, const T* a, int64_t lda,
          const T* b, int64_t ldb, double beta, T* c, int64_t ldc) {
    blas_gemm<T>(transpose_a, transpose_b, m, n, k, static_cast<T>(alpha), a, lda, b, ldb, static_cast<T>(beta), c,
                 ldc);
}

// Rows per task in the row passes: a task of at least ~16k logits.
int64_t row_grain(int64_t columns) { return std::max<int64_t>(1, 16384 / std::max<int64_t>(1, columns)); }

// The problem as raw pointers: q [N, d], C = [p; negatives] [K = N+M, d].
template <typename T>
struct Problem {
    int64_t N, M, K, d;
    const T* q;
    const T* candidates;
    Tensor candidates_storage;  // keeps C alive when it is a concatenation
    double inverse_tau;
};

template <typename T>
Problem<T> make_problem(const Tensor& q, const Tensor& p, const Tensor& negatives, double tau) {
    Problem<T> problem;
    problem.N = q.size(0);
    problem.d = q.size(1);
    problem.M = negatives.defined() ? negatives.size(0) : 0;
    problem.K = problem.N + problem.M;
    problem.candidates_storage = negatives.defined() ? concat({p, negatives}, 0) : p;  // C [N+M, d]
    problem.q = q.data<T>();
    problem.candidates = problem.candidates_storage.template data<T>();
    problem.inverse_tau = 1.0 / tau;
    return problem;
}

// l_b = q_b C^T / tau for rows [start, start + rows): [rows, K] into `logits` (row stride K).
template <typename T>
void block_logits(const Problem<T>& problem, int64_t start, int64_t rows, T* logits) {
    gemm<T>(false, true, rows, problem.K, problem.d, problem.inverse_tau, problem.q + start * problem.d, problem.d,
            problem.candidates, problem.d, 0.0, logits, problem.K);
}

// The gradient GEMMs of one block, given G_b = dL/dl_b [rows, K] (row stride K):
//   dq_b = G_b C / tau                          [rows, K]·[K, d]
//   dp  += G_b[:, :N]^T q_b / tau               [N, rows]·[rows, d]
//   dnegatives += G_b[:, N:]^T q_b / tau        [M, rows]·[rows, d]
// The first block (start = 0) writes dp and dnegatives instead of adding.
template <typename T>
void block_gradients(const Problem<T>& problem, int64_t start, int64_t rows, const T* G, InfonceSweep& out) {
    int64_t N = problem.N, M = problem.M, K = problem.K, d = problem.d;
    const T* q_block = problem.q + start * d;
    double accumulate = start == 0 ? 0.0 : 1.0;
    gemm<T>(false, false, rows, d, K, problem.inverse_tau, G, K, problem.candidates, d, 0.0,
            out.dq.data<T>() + start * d, d);
    gemm<T>(true, false, N, d, rows, problem.inverse_tau, G, K, q_block, d, accumulate, out.dp.data<T>(), d);
    if (M > 0)
        gemm<T>(true, false, M, d, rows, problem.inverse_tau, G + N, K, q_block, d, accumulate,
                out.dnegatives.data<T>(), d);
}

// dL/dtau = -(1/tau) sum_i q_i·dq_i: the logits need not be kept (the identity is step 4
// of docs/derivations/infonce.md).
template <typename T>
double temperature_gradient(const Problem<T>& problem, const Tensor& dq) {
    const T* dq_data = dq.data<T>();
    double total = 0;
    for (int64_t k = 0; k < problem.N * problem.d; ++k) total += double(problem.q[k]) * double(dq_data[k]);
    return -total * problem.inverse_tau;
}

void allocate_gradients(const Tensor& q, const Tensor& negatives, InfonceSweep& out) {
    out.dq = Tensor::empty(q.shape(), q.dtype());
    out.dp = Tensor::empty(q.shape(), q.dtype());
    if (negatives.defined()) out.dnegatives = Tensor::empty(negatives.shape(), q.dtype());
}

// ---------------------------------------------------------------- one direction

// Row i of a block, l_i = l[i, :] [K], positive at column i:
//   loss_i = lse_j l_ij - l_ii = m + log s - l_ii,   m = max_j l_ij,  s = sum_j exp(l_ij - m)
//   G_ij = (exp(l_ij - m) / s - [j = i]) / N            written over l_i
template <typename T>
InfonceSweep one_direction(const Tensor& q, const Tensor& p, const Tensor& negatives, double tau, bool with_gradient,
                           LogitBlocking blocking) {
    Problem<T> problem = make_problem<T>(q, p, negatives, tau);
    int64_t N = problem.N, K = problem.K;
    int64_t block_rows = logit_block_rows(blocking, N, K, q.dtype());
    Tensor block = Tensor::empty({block_rows, K}, q.dtype());  // l_b, then G_b   [block_rows, K]
    T* logits = block.data<T>();
    std::vector<double> row_loss(N);
    InfonceSweep out;
    if (with_gradient) allocate_gradients(q, negatives, out);

    for (int64_t start = 0; start < N; start += block_rows) {
        int64_t rows = std::min(block_rows, N - start);
        block_logits(problem, start, rows, logits);
        parallel_for(rows, row_grain(K), [&](int64_t begin, int64_t end) {
            for (int64_t r = begin; r < end; ++r) {
                int64_t i = start + r;
                RowMap<T> row(logits + r * K, K);
                T positive = row[i], shift = row.maxCoeff();
                if (!with_gradient) {
                    row_loss[i] = double(shift) + std::log(double(exact_exp(row - shift).sum())) - double(positive);
                    continue;
                }
                row = exact_exp(row - shift);
                double total = double(row.sum());
                row_loss[i] = double(shift) + std::log(total) - double(positive);
                row *= T(1.0 / (double(N) * total));
                row[i] -= T(1.0 / double(N));
            }
        });
        if (with_gradient) block_gradients(problem, start, rows, logits, out);
    }
    double total = 0;
    for (double value : row_loss) total += value;
    out.loss = total / double(N);
    if (with_gradient) out.dloss_dtau = temperature_gradient(problem, out.dq);
    return out;
}

// ---------------------------------------------------------------- both directions

// Running column statistics of a[:, j] for j < N over the blocks seen so far:
// column_max_j = max_i a_ij and column_sum_j = sum_i exp(a_ij - column_max_j). A block's
// exps are summed in T (vectorised), the blocks' sums in double, so N terms add up
// without losing float32's digits.
template <typename T>
struct ColumnStatistics {
    Array<T> max;
    Array<double> sum;
    explicit ColumnStatistics(int64_t N)
        : max(Array<T>::Constant(N, -std::numeric_limits<T>::infinity())), sum(Array<double>::Zero(N)) {}
};

constexpr int64_t kColumnChunk = 128;  // columns per task in the column pass: 128 x 1024 rows = 512 KiB, in L2

// Adds the rows of block a_b [rows, K] to the statistics of columns [0, N): for each chunk
// of columns, the new max (running and the block's), then the running sum rescaled to it,
// sum · exp(old max - new max), plus the block's sum_i exp(a_ij - new max).
template <typename T>
void add_block_to_columns(const T* block, int64_t rows, int64_t N, int64_t K, ColumnStatistics<T>& columns) {
    int64_t chunks = (N + kColumnChunk - 1) / kColumnChunk;
    parallel_for(chunks, 1, [&](int64_t begin, int64_t end) {
        for (int64_t chunk = begin; chunk < end; ++chunk) {
            int64_t first = chunk * kColumnChunk, width = std::min(kColumnChunk, N - first);
            auto running_max = columns.max.segment(first, width);
            auto running_sum = columns.sum.segment(first, width);
            Array<T> new_max = running_max;
            for (int64_t r = 0; r < rows; ++r)
                new_max = new_max.max(Eigen::Map<const Array<T>>(block + r * K + first, width));
            Array<T> rescale = exact_exp(running_max - new_max), block_sum = Array<T>::Zero(width);
            for (int64_t r = 0; r < rows; ++r)
                block_sum += exact_exp(Eigen::Map<const Array<T>>(block + r * K + first, width) - new_max);
            running_sum = running_sum * rescale.template cast<double>() + block_sum.template cast<double>();
            running_max = new_max;
        }
    });
}

// Symmetric: dL/da = G = A + [B^T | 0] [N, K] (derived in docs/derivations/infonce_symmetric.md):
//   G_ij = ( exp(a_ij - row_lse_i) - [j = i] ) / 2N  +  [j < N] ( exp(a_ij - column_lse_j) - [j = i] ) / 2N
// the first term A from q->p (the softmax of row i), the second B^T from p->q (b = a[:, :N]^T,
// so its row softmax is the column softmax of a). Sweep 1 gathers row_lse, column_lse and the
// diagonal; sweep 2 writes G over each block and runs the gradient GEMMs.
template <typename T>
InfonceSweep both_directions(const Tensor& q, const Tensor& p, const Tensor& negatives, double tau,
                             bool with_gradient, LogitBlocking blocking) {
    Problem<T> problem = make_problem<T>(q, p, negatives, tau);
    int64_t N = problem.N, K = problem.K;
    int64_t block_rows = logit_block_rows(blocking, N, K, q.dtype());
    // Keep every block of sweep 1 for sweep 2 (three GEMMs), or form them again (four).
    bool keep_logits = symmetric_keeps_logits(blocking, N, K, q.dtype()) && (with_gradient || block_rows >= N);
    Tensor logits_storage = Tensor::empty({keep_logits ? N : block_rows, K}, q.dtype());
    T* storage = logits_storage.data<T>();
    auto block_at = [&](int64_t start) { return keep_logits ? storage + start * K : storage; };

    std::vector<T> row_lse(N), diagonal(N);
    ColumnStatistics<T> columns(N);
    for (int64_t start = 0; start < N; start += block_rows) {
        int64_t rows = std::min(block_rows, N - start);
        T* block = block_at(start);
        block_logits(problem, start, rows, block);
        parallel_for(rows, row_grain(K), [&](int64_t begin, int64_t end) {
            for (int64_t r = begin; r < end; ++r) {
                int64_t i = start + r;
                RowMap<T> row(block + r * K, K);
                T shift = row.maxCoeff();
                diagonal[i] = row[i];
                row_lse[i] = T(double(shift) + std::log(double(exact_exp(row - shift).sum())));
            }
        });
        add_block_to_columns(block, rows, N, K, columns);
    }
    Array<T> column_lse = (columns.max.template cast<double>() + columns.sum.log()).template cast<T>();
    double total = 0;
    for (int64_t i = 0; i < N; ++i)
        total += double(row_lse[i]) - double(diagonal[i]) + double(column_lse[i]) - double(diagonal[i]);
    InfonceSweep out;
    out.loss = total / (2.0 * double(N));
    if (!with_gradient) return out;

    allocate_gradients(q, negatives, out);
    T half_mean = T(1.0 / (2.0 * double(N)));
    for (int64_t start = 0; start < N; start += block_rows) {
        int64_t rows = std::min(block_rows, N - start);
        T* block = block_at(start);
        if (!keep_logits) block_logits(problem, start, rows, block);
        parallel_for(rows, row_grain(K), [&](int64_t begin, int64_t end) {
            for (int64_t r = begin; r < end; ++r) {
                int64_t i = start + r;
                RowMap<T> row(block + r * K, K);
                T lse = row_lse[i];
                row.head(N) = (exact_exp(row.head(N) - lse) + exact_exp(row.head(N) - column_lse)) * half_mean;
                row.tail(K - N) = exact_exp(row.tail(K - N) - lse) * half_mean;
                row[i] -= 2 * half_mean;
            }
        });
        block_gradients(problem, start, rows, block, out);
    }
    out.dloss_dtau = temperature_gradient(problem, out.dq);
    return out;
}

}  // namespace

bool symmetric_keeps_logits(LogitBlocking blocking, int64_t rows, int64_t columns, Dtype dtype) {
    if (blocking.block_rows > 0) return blocking.block_rows >= rows;  // one block: the unblocked computation
    return rows * columns * static_cast<int64_t>(dtype_size(dtype)) <= kLogitMemoryBudget;
}

int64_t logit_block_rows(LogitBlocking blocking, int64_t rows, int64_t columns, Dtype dtype) {
    NCE_CHECK(blocking.block_rows >= 0, "InfoNCE: block_rows must be 0 (automatic) or a positive row count, got {}",
              blocking.block_rows);
    int64_t chosen = blocking.block_rows;
    if (chosen == 0) {
        int64_t row_bytes = std::max<int64_t>(1, columns) * static_cast<int64_t>(dtype_size(dtype));
        chosen = std::max<int64_t>(64, std::min(kAutomaticBlockRows, kBlockMemoryCap / row_bytes));
    }
    return std::max<int64_t>(1, std::min(chosen, rows));
}

InfonceSweep infonce_sweep(const Tensor& q, const Tensor& p, const Tensor& negatives, double tau, bool with_gradient,
                           LogitBlocking blocking) {
    if (q.dtype() == Dtype::Float32) return one_direction<float>(q, p, negatives, tau, with_gradient, blocking);
    return one_direction<double>(q, p, negatives, tau, with_gradient, blocking);
}

InfonceSweep infonce_symmetric_sweep(const Tensor& q, const Tensor& p, const Tensor& negatives, double tau,
                                     bool with_gradient, LogitBlocking blocking) {
    if (q.dtype() == Dtype::Float32) return both_directions<float>(q, p, negatives, tau, with_gradient, blocking);
    return both_directions<double>(q, p, negatives, tau, with_gradient, blocking);
}

}  // namespace nce::losses
