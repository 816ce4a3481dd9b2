// Softmax and log-softmax over the last axis, and their backward, one row per task.
#include <Eigen/Core>
#include <cmath>

#include "engine/cpu/cpu_backend.h"
#include "engine/cpu/exact_exp.h"

namespace nce::cpu {

// y_j = exp(x_j - m) / sum_k exp(x_k - m), m = max_k x_k: the shift leaves y unchanged and
// keeps every exponent <= 0. log y_j = x_j - m - log sum_k exp(x_k - m).
// A -inf entry (masked) gets probability exactly 0 (engine/cpu/exact_exp.h).
// A row of all -inf (everything masked) has no softmax: it comes out NaN, and the ops that
// allow masking check for it before calling.
void CpuBackend::softmax_last_axis(const Tensor& x, Tensor& out, bool log) {
    dispatch_floating(x.dtype(), "softmax", [&](auto zero) {
        using T = decltype(zero);
        using Row = Eigen::Array<T, Eigen::Dynamic, 1>;
        int64_t columns = x.rank() == 0 ? 1 : x.size(-1);
        int64_t rows = columns == 0 ? 0 : x.numel() / columns;
        const T* xs = x.data<T>();
        T* ys = out.data<T>();
        parallel_for(rows, row_grain(columns), [&](int64_t begin, int64_t end) {
            for (int64_t r = begin; r < end; ++r) {
                Eigen::Map<const Row> in(xs + r * columns, columns);
                Eigen::Map<Row> y(ys + r * columns, columns);
                T shift = in.maxCoeff();
                y = exact_exp(in - shift);  // a -inf entry (masked) gets exactly 0
                T total = y.sum();
                if (log)
                    y = in - shift - std::log(total);
                else
                    y /= total;
            }
        });
    });
}

// softmax:     dx_j = y_j (dy_j - sum_k dy_k y_k)
// log-softmax: dx_j = dy_j - softmax_j · sum_k dy_k,  softmax_j = exp(y_j)
void CpuBackend::softmax_last_axis_backward(const Tensor& y, const Tensor& dy, Tensor& dx, bool log) {
    dispatch_floating(y.dtype(), "softmax backward", [&](auto zero) {
        using T = decltype(zero);
        using Row = Eigen::Array<T, Eigen::Dynamic, 1>;
        int64_t columns = y.rank() == 0 ? 1 : y.size(-1);
        int64_t rows = columns == 0 ? 0 : y.numel() / columns;
        const T* ys = y.data<T>();
        const T* dys = dy.data<T>();
        T* dxs = dx.data<T>();
        parallel_for(rows, row_grain(columns), [&](int64_t begin, int64_t end) {
            for (int64_t r = begin; r < end; ++r) {
                Eigen::Map<const Row> out(ys + r * columns, columns), g(dys + r * columns, columns);
                Eigen::Map<Row> d(dxs + r * columns, columns);
                if (log)
                    d = g - exact_exp(out) * g.sum();
                else
                    d = out * (g - (g * out).sum());
            }
        });
    });
}

// Row r against target t = target_start + r (the InfoNCE sweep's row step):
//   loss_r = m + log s - l_rt,   m = max_j l_rj,  s = sum_j exp(l_rj - m)
//   l_rj <- scale · (exp(l_rj - m) / s - [j = t])
void CpuBackend::cross_entropy_rows(Tensor& logits, int64_t target_start, double scale, Tensor& row_loss) {
    dispatch_floating(logits.dtype(), "cross_entropy_rows", [&](auto zero) {
        using T = decltype(zero);
        using Row = Eigen::Array<T, Eigen::Dynamic, 1>;
        const int64_t rows = logits.size(0), columns = logits.size(1);
        T* values = logits.data<T>();
        T* losses = row_loss.data<T>();
        parallel_for(rows, row_grain(columns), [&](int64_t begin, int64_t end) {
            for (int64_t r = begin; r < end; ++r) {
                Eigen::Map<Row> row(values + r * columns, columns);
                const int64_t target = target_start + r;
                const T positive = row[target], shift = row.maxCoeff();
                row = exact_exp(row - shift);
                const double total = double(row.sum());
                losses[r] = T(double(shift) + std::log(total) - double(positive));
                row *= T(scale / total);
                row[target] -= T(scale);
            }
        });
    });
}

}  // namespace nce::cpu
