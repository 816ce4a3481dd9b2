#include "losses/infonce_rows.h"

#include <algorithm>

namespace nce::losses {

namespace {

int64_t device_block_rows(int64_t block_rows, int64_t rows, int64_t columns, Dtype dtype) {
    if (block_rows > 0) return std::min(block_rows, rows);
    const int64_t row_bytes = std::max<int64_t>(1, columns) * static_cast<int64_t>(dtype_size(dtype));
    return std::max<int64_t>(1, std::min(rows, kDeviceLogitBudget / row_bytes));
}

}  // namespace

// Row i of a block (see the header): loss_i = lse_j l_ij - l_ii, G_ij = (P_ij - [j = i]) / N,
// then dq = G C / tau and dC = G^T q / tau, each block's share added in order.
InfonceRows infonce_rows(const Tensor& q, const Tensor& candidates, double tau, bool with_gradient,
                         int64_t block_rows) {
    const int64_t N = q.size(0), K = candidates.size(0);
    const double inverse_tau = 1.0 / tau, inverse_n = 1.0 / static_cast<double>(N);
    const int64_t height = device_block_rows(block_rows, N, K, q.dtype());
    InfonceRows out;
    if (with_gradient) {
        out.dq = Tensor::empty(q.shape(), q.dtype(), q.device());                    // [N, d]
        out.dcandidates = Tensor::empty(candidates.shape(), q.dtype(), q.device());  // [K, d]
    }
    Tensor loss_sum;
    for (int64_t start = 0; start < N; start += height) {
        const int64_t rows = std::min(height, N - start);
        const Tensor q_block = q.rows(start, start + rows);                        // [R, d]
        Tensor logits = Tensor::empty({rows, K}, q.dtype(), q.device());           // [R, K]
        matmul_into(q_block, candidates, Transpose::Second, logits, inverse_tau);  // l_b = q_b C^T / tau
        const Tensor row_loss = cross_entropy_rows_inplace(logits, start, inverse_n);  // logits now hold G_b
        loss_sum = start == 0 ? sum(row_loss) : loss_sum + sum(row_loss);
        if (!with_gradient) continue;
        Tensor dq_block = out.dq.rows(start, start + rows);
        matmul_into(logits, candidates, Transpose::None, dq_block, inverse_tau);             // G_b C / tau
        matmul_into(logits, q_block, Transpose::First, out.dcandidates, inverse_tau,
                    start == 0 ? 0.0 : 1.0);                                                  // += G_b^T q_b / tau
    }
    out.loss = loss_sum * inverse_n;
    if (with_gradient) out.dloss_dtau = sum(q * out.dq) * -inverse_tau;
    return out;
}

}  // namespace nce::losses
