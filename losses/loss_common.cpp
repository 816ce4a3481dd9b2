#include "losses/loss_common.h"

#include <cmath>

namespace nce::losses {

Temperature resolve_temperature(const Var& log_tau, double tau, const char* loss) {
    Temperature temperature;
    if (!log_tau.defined()) {
        NCE_CHECK(tau > 0 && std::isfinite(tau), "{}: tau must be > 0, got {}", loss, tau);
        temperature.tau = tau;
        return temperature;
    }
    double value = read_scalar(log_tau, loss, "log_tau");
    temperature.learnable = true;
    temperature.tau = std::exp(value);
    if (temperature.tau < kMinTemperature) {
        temperature.tau = kMinTemperature;
        temperature.clamped = true;
    }
    return temperature;
}

Tensor log_tau_gradient(const Temperature& temperature, double dloss_dtau, const Var& log_tau) {
    if (!temperature.learnable) return Tensor();
    return scalar_like(log_tau, temperature.clamped ? 0.0 : temperature.tau * dloss_dtau);
}

Tensor log_tau_gradient(const Temperature& temperature, const Tensor& dloss_dtau, const Var& log_tau) {
    if (!temperature.learnable) return Tensor();
    if (temperature.clamped) return scalar_like(log_tau, 0.0);
    return (dloss_dtau * temperature.tau).reshape(log_tau.shape()).to(log_tau.dtype()).to(log_tau.value().device());
}

void check_matrix(const Var& x, const char* loss, const char* name) {
    check_matrix_shape(x, loss, name);
    check_finite(x.value(), loss, name);
}

void check_matrix_shape(const Var& x, const char* loss, const char* name) {
    NCE_CHECK(x.defined(), "{}: input {} is missing", loss, name);
    NCE_CHECK(is_floating(x.dtype()), "{}: {} must be float32 or float64, got {}", loss, name, dtype_name(x.dtype()));
    NCE_CHECK(x.value().rank() == 2, "{}: {} must be a matrix [rows, d], got shape {}", loss, name,
              shape_string(x.shape()));
}

void check_same_shape(const Var& a, const Var& b, const char* loss, const char* name_a, const char* name_b) {
    NCE_CHECK(a.shape() == b.shape(), "{}: {} {} and {} {} must have the same shape", loss, name_a,
              shape_string(a.shape()), name_b, shape_string(b.shape()));
}

void check_same_dim(const Var& a, const Var& b, const char* loss, const char* name_a, const char* name_b) {
    NCE_CHECK(a.size(-1) == b.size(-1), "{}: {} {} and {} {} must have the same embedding dimension", loss, name_a,
              shape_string(a.shape()), name_b, shape_string(b.shape()));
}

void check_min_rows(int64_t rows, int64_t minimum, const char* loss, const char* what) {
    NCE_CHECK(rows >= minimum, "{}: needs {} >= {} (got {})", loss, what, minimum, rows);
}

void check_finite(const Tensor& x, const char* loss, const char* name) {
    NCE_CHECK(all_finite(x), "{}: {} contains NaN or Inf; every entry must be finite", loss, name);
}

void check_data_vector(const Var& data, int64_t n, const char* loss, const char* name) {
    NCE_CHECK(data.defined(), "{}: input {} is missing", loss, name);
    NCE_CHECK(data.value().rank() == 1 && data.size(0) == n, "{}: {} must be a vector of length {}, got shape {}", loss,
              name, n, shape_string(data.shape()));
    check_finite(data.value(), loss, name);
}

std::vector<int64_t> read_ids(const Var& data, int64_t n, const char* loss, const char* name) {
    check_data_vector(data, n, loss, name);
    if (data.dtype() == Dtype::Int64) return data.value().to_indices();
    std::vector<int64_t> ids;
    for (double v : data.value().to_vector()) {
        NCE_CHECK(v == std::floor(v), "{}: {} must hold whole numbers, got {}", loss, name, v);
        ids.push_back(static_cast<int64_t>(v));
    }
    return ids;
}

std::vector<double> read_values(const Var& data, int64_t n, const char* loss, const char* name) {
    check_data_vector(data, n, loss, name);
    return data.value().to_vector();
}

double read_scalar(const Var& x, const char* loss, const char* name) {
    NCE_CHECK(x.defined(), "{}: input {} is missing", loss, name);
    NCE_CHECK(is_floating(x.dtype()), "{}: {} must be float32 or float64, got {}", loss, name, dtype_name(x.dtype()));
    NCE_CHECK(x.value().numel() == 1 && x.value().rank() <= 1, "{}: {} must have one element (shape [] or [1]), got {}",
              loss, name, shape_string(x.shape()));
    double value = x.value().item();
    NCE_CHECK(std::isfinite(value), "{}: {} is {}; it must be finite", loss, name, value);
    return value;
}

Tensor scalar_like(const Var& like, double value) {
    return Tensor::full(like.shape(), value, like.dtype(), like.value().device());
}

Tensor identity_like(int64_t n, const Tensor& like) {
    Tensor identity = Tensor::zeros({n, n}, Dtype::Float64);
    for (int64_t i = 0; i < n; ++i) identity.data<double>()[i * n + i] = 1.0;
    return identity.to(like.dtype()).to(like.device());
}

Tensor row_norms(const Tensor& x) { return sqrt(sum(square(x), 1)); }

Tensor unit_rows(const Tensor& x, const Tensor& norms) {
    // Divide by 1 where the norm is 0: such a row is all zeros, so the quotient is 0.
    Tensor divisor = keep_where(norms, step(norms), 1.0);  // [N]
    return x / divisor.reshape({x.size(0), 1});
}

Tensor hinge_slope(const Tensor& hinge) {
    int64_t N = hinge.size(0);
    return (step(hinge) / static_cast<double>(N)).reshape({N, 1});
}

}  // namespace nce::losses
