// The InfoNCE sweep in engine ops, for tensors on any device: the GPU's path for infonce
// and infonce_symmetric. The CPU keeps its own fused kernels (infonce_blocks.h), which work
// on raw pointers; this sweep is the same plan written with tensors, so every step runs on
// the inputs' device and nothing but the caller's final read of the loss crosses to the host:
//
//   for each block of rows q_b = q[start : start + R]           (a view, no copy)
//     l_b  = q_b C^T / tau                 [R, K]   one GEMM, 1/tau as its alpha
//     row_loss_b, G_b = cross_entropy_rows(l_b, targets start.., scale 1/N)   G_b written over l_b
//     dq_b = G_b C / tau                   [R, d]   GEMM into rows of dq
//     dC  += G_b^T q_b / tau               [K, d]   GEMM, beta 1 after the first block
//   L = (1/N) sum row_loss,  dL/dtau = -(1/tau) sum_i q_i·dq_i      (device scalars)
//
// The symmetric loss is the mean of two such sweeps, q against C = [p; negatives] and p
// against q (b = p q^T / tau, whose rows are a's columns): no column statistics, no N x N
// matrix beyond one block. Derivations: docs/derivations/infonce.md and infonce_symmetric.md.
#pragma once
#include <cstdint>

#include "engine/nce.h"

namespace nce::losses {

// One direction: the loss and, with_gradient, its gradients at dy = 1. Device scalars.
struct InfonceRows {
    Tensor loss;         // []
    Tensor dq;           // [N, d]
    Tensor dcandidates;  // [K, d]
    Tensor dloss_dtau;   // []: -(1/tau) sum_i q_i·dq_i
};

// Automatic block height on a device: the whole logit matrix while it takes at most this
// many bytes (one block, three GEMMs), else as many rows as fit in it.
constexpr int64_t kDeviceLogitBudget = int64_t{1} << 30;

// q [N, d] against candidates [K, d], K >= N, row i's positive at column i. block_rows 0:
// automatic (kDeviceLogitBudget).
InfonceRows infonce_rows(const Tensor& q, const Tensor& candidates, double tau, bool with_gradient,
                         int64_t block_rows);

}  // namespace nce::losses
