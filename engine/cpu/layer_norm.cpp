// Layer normalisation over the last axis, forward and backward, one row per task.
#include <Eigen/Core>
#include <cmath>

#include "engine/cpu/cpu_backend.h"

namespace nce::cpu {

// Row x of length D: mean = (1/D) sum x, var = (1/D) sum (x - mean)^2 (biased, as PyTorch),
// rstd = 1 / sqrt(var + eps), xhat = (x - mean) · rstd, y = xhat · weight + bias.
void CpuBackend::layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps, Tensor& y,
                            Tensor& mean, Tensor& rstd) {
    dispatch_floating(x.dtype(), "layer_norm", [&](auto zero) {
        using T = decltype(zero);
        using Row = Eigen::Array<T, Eigen::Dynamic, 1>;
        int64_t width = x.size(-1), rows = width == 0 ? 0 : x.numel() / width;
        const T* xs = x.data<T>();
        Eigen::Map<const Row> w(weight.data<T>(), width), b(bias.data<T>(), width);
        T* ys = y.data<T>();
        T* means = mean.data<T>();
        T* rstds = rstd.data<T>();
        parallel_for(rows, row_grain(width), [&](int64_t begin, int64_t end) {
            for (int64_t r = begin; r < end; ++r) {
                Eigen::Map<const Row> in(xs + r * width, width);
                Eigen::Map<Row> out(ys + r * width, width);
                T mu = in.mean();
                T variance = (in - mu).square().mean();
                T inv = T(1) / std::sqrt(variance + static_cast<T>(eps));
                out = (in - mu) * inv * w + b;
                means[r] = mu;
                rstds[r] = inv;
            }
        });
    });
}

// With g = dy · weight (per element) and xhat as above, per row:
//   dx = rstd · ( g - mean(g) - xhat · mean(g · xhat) )
//   dweight = sum over rows of dy · xhat,   dbias = sum over rows of dy
void CpuBackend::layer_norm_backward(const Tensor& x, const Tensor& weight, const Tensor& mean, const Tensor& rstd,
                                     const Tensor& dy, Tensor& dx, Tensor& dweight, Tensor& dbias) {
    dispatch_floating(x.dtype(), "layer_norm backward", [&](auto zero) {
        using T = decltype(zero);
        using Row = Eigen::Array<T, Eigen::Dynamic, 1>;
        int64_t width = x.size(-1), rows = width == 0 ? 0 : x.numel() / width;
        const T* xs = x.data<T>();
        const T* dys = dy.data<T>();
        Eigen::Map<const Row> w(weight.data<T>(), width);
        const T* means = mean.data<T>();
        const T* rstds = rstd.data<T>();
        T* dxs = dx.data<T>();
        parallel_for(rows, row_grain(width), [&](int64_t begin, int64_t end) {
            for (int64_t r = begin; r < end; ++r) {
                Eigen::Map<const Row> in(xs + r * width, width), g_out(dys + r * width, width);
                Eigen::Map<Row> d(dxs + r * width, width);
                // xhat and g as expressions, not temporaries: no allocation per row.
                auto xhat = (in - means[r]) * rstds[r];
                auto g = g_out * w;
                const T g_mean = g.mean(), g_xhat_mean = (g * xhat).mean();
                d = rstds[r] * (g - g_mean - xhat * g_xhat_mean);
            }
        });
        // Parameter gradients: sums over rows, split over columns so each column is summed
        // by one task in row order (deterministic).
        T* dw = dweight.data<T>();
        T* db = dbias.data<T>();
        // The sums build in local arrays (the compiler then vectorises across columns).
        parallel_for(width, 64, [&](int64_t begin, int64_t end) {
            const int64_t count = end - begin;
            Row weight_sum = Row::Zero(count), bias_sum = Row::Zero(count);
            for (int64_t r = 0; r < rows; ++r) {
                Eigen::Map<const Row> g(dys + r * width + begin, count), in(xs + r * width + begin, count);
                weight_sum += g * (in - means[r]) * rstds[r];
                bias_sum += g;
            }
            Eigen::Map<Row>(dw + begin, count) = weight_sum;
            Eigen::Map<Row>(db + begin, count) = bias_sum;
        });
    });
}

}  // namespace nce::cpu
