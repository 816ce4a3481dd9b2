#include "distributed/anchor_rows_infonce.h"

#include <cmath>

#include "losses/loss_common.h"
#include "losses/softmax_rows.h"

namespace nce::distributed {

namespace {

// 0 at (i, excluded(i)), 1 elsewhere: keep_where keeps the 1s.   [n, C]
Tensor keep_mask(const std::vector<int64_t>& excluded_column, int64_t columns, Dtype dtype) {
    Tensor mask = Tensor::full({static_cast<int64_t>(excluded_column.size()), columns}, 1.0, Dtype::Float64);
    for (size_t i = 0; i < excluded_column.size(); ++i)
        if (excluded_column[i] >= 0) mask.data<double>()[static_cast<int64_t>(i) * columns + excluded_column[i]] = 0.0;
    return mask.to(dtype);
}

}  // namespace

// InfoNCE rows of this rank's anchors.
//   a: [n, d]   c: [C, d]   S = a c^T: [n, C]   l = S / tau, with l_i,excluded(i) = -inf
//   L = scale · sum_i ( lse_j l_ij - l_i,positive(i) )
//
// Backward (the same steps as losses/infonce.cpp, with `scale` in place of 1/N):
//   dL/dl   = G = scale · (P - Y)          [n, C]   P = softmax rows of l (0 at excluded), Y one-hot at positive(i)
//   dL/da   = G · c / tau                  [n, C]·[C, d]
//   dL/dc   = G^T · a / tau                [C, n]·[n, d]
//   dL/dtau = -(1/tau^2) sum_ij G_ij S_ij  since l_ij = S_ij / tau; S, not l: an excluded l is -inf but its G is 0
//   dL/dlog_tau = tau · dL/dtau            (0 while tau is clamped at 1e-4)
// The node's output gradient dy (a scalar) multiplies each of them.
Var anchor_rows_infonce(const Var& anchors, const Var& candidates, const std::vector<int64_t>& positive_column,
                        const std::vector<int64_t>& excluded_column, const Var& log_tau, double tau, double scale,
                        const char* loss) {
    NCE_CHECK(anchors.defined() && anchors.value().rank() == 2, "{}: the anchors must be a matrix [n, d], got shape {}",
              loss, anchors.defined() ? shape_string(anchors.shape()) : std::string("undefined"));
    losses::check_finite(anchors.value(), loss, "anchors");
    losses::check_matrix(candidates, loss, "candidates");
    losses::check_same_dim(anchors, candidates, loss, "anchors", "candidates");
    NCE_CHECK(anchors.dtype() == candidates.dtype(), "{}: anchors are {} but candidates are {}; give every embedding "
              "the same dtype", loss, dtype_name(anchors.dtype()), dtype_name(candidates.dtype()));
    const int64_t n = anchors.size(0), C = candidates.size(0);
    NCE_CHECK(static_cast<int64_t>(positive_column.size()) == n, "{}: {} positive columns for {} anchor rows", loss,
              positive_column.size(), n);
    NCE_CHECK(excluded_column.empty() || static_cast<int64_t>(excluded_column.size()) == n,
              "{}: {} excluded columns for {} anchor rows", loss, excluded_column.size(), n);
    for (int64_t i = 0; i < n; ++i) {
        NCE_CHECK(positive_column[i] >= 0 && positive_column[i] < C,
                  "{}: anchor row {} has positive column {}, outside the {} candidates", loss, i, positive_column[i],
                  C);
        NCE_CHECK(excluded_column.empty() || (excluded_column[i] >= -1 && excluded_column[i] < C &&
                                              excluded_column[i] != positive_column[i]),
                  "{}: anchor row {} excludes column {}; it must be -1 or a candidate other than the positive", loss, i,
                  excluded_column[i]);
    }
    NCE_CHECK(tau > 0 && std::isfinite(tau), "{}: parameter tau must be a finite number > 0, got {}", loss, tau);
    losses::Temperature temperature = losses::resolve_temperature(log_tau, tau, loss);

    Tensor similarities = matmul(anchors.value(), candidates.value(), Transpose::Second);  // S [n, C]
    Tensor logits = similarities / temperature.tau;                                      // l [n, C]
    if (!excluded_column.empty())
        logits = keep_where(logits, keep_mask(excluded_column, C, logits.dtype()), -INFINITY);
    losses::SoftmaxCrossEntropy rows = losses::softmax_cross_entropy_rows(logits, positive_column);
    Tensor loss_value = Tensor::scalar(scale * rows.loss_sum().item(), anchors.dtype());

    Tensor G = rows.probabilities_minus_targets * scale;  // dL/dl [n, C]
    Tensor dloss_dlog_tau;  // at dy = 1; stays undefined for a fixed tau
    if (temperature.learnable) {
        double dloss_dtau = -sum(G * similarities).item() / (temperature.tau * temperature.tau);
        dloss_dlog_tau = losses::log_tau_gradient(temperature, dloss_dtau, log_tau);
    }

    std::vector<Var> inputs{anchors, candidates};
    if (log_tau.defined()) inputs.push_back(log_tau);
    return Var::from_op(loss, std::move(loss_value), inputs,
                        [a = anchors.value(), c = candidates.value(), G, dloss_dlog_tau,
                         inverse_tau = 1.0 / temperature.tau](const Tensor& dy) -> Grads {
                            double factor = dy.item() * inverse_tau;
                            Grads grads{matmul(G, c) * factor,                      // G · c / tau     [n, d]
                                        matmul(G, a, Transpose::First) * factor};   // G^T · a / tau   [C, d]
                            if (dloss_dlog_tau.defined()) grads.push_back(dloss_dlog_tau * dy.item());
                            return grads;
                        });
}

}  // namespace nce::distributed
