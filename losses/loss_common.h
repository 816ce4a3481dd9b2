// What every loss needs besides its own math: the temperature (fixed or learnable), input
// validation with one-line errors, and reading data vectors (qid, rank, score, label).
#pragma once
#include <string>
#include <vector>

#include "engine/nce.h"

namespace nce::losses {

// The temperature of a loss call. With a learnable log_tau, tau = max(exp(log_tau), 1e-4)
// and the `tau` parameter is ignored (spec, Conventions).
struct Temperature {
    double tau = 0;
    bool learnable = false;  // log_tau was given
    bool clamped = false;    // exp(log_tau) < 1e-4, so tau sits at the floor
};

constexpr double kMinTemperature = 1e-4;

// log_tau may be undefined (fixed temperature `tau`). Checks log_tau has one element and
// is finite.
Temperature resolve_temperature(const Var& log_tau, double tau, const char* loss);

// dL/dlog_tau from dL/dtau: tau = exp(log_tau) gives dtau/dlog_tau = tau, so
// dL/dlog_tau = tau · dL/dtau; it is 0 while the clamp holds (tau is then a constant).
// Returned in log_tau's shape and dtype, on its device. Undefined when the temperature is not learnable.
Tensor log_tau_gradient(const Temperature& temperature, double dloss_dtau, const Var& log_tau);
// The same from dL/dtau as a one-element tensor on the loss's device (read by nobody on the host).
Tensor log_tau_gradient(const Temperature& temperature, const Tensor& dloss_dtau, const Var& log_tau);

// A float matrix [rows, d] with finite entries; `name` is the input's name in the spec.
void check_matrix(const Var& x, const char* loss, const char* name);
// The same without reading the values: a float matrix. (On a device, reading them is a wait
// on it; the InfoNCE family lets a NaN or Inf make the loss itself non-finite instead.)
void check_matrix_shape(const Var& x, const char* loss, const char* name);
// Same shape for two inputs.
void check_same_shape(const Var& a, const Var& b, const char* loss, const char* name_a, const char* name_b);
// Same number of columns (embedding dimension).
void check_same_dim(const Var& a, const Var& b, const char* loss, const char* name_a, const char* name_b);
// At least `minimum` rows, with the spec's reason.
void check_min_rows(int64_t rows, int64_t minimum, const char* loss, const char* what);
// Every entry finite (NaN or Inf is an error naming the input).
void check_finite(const Tensor& x, const char* loss, const char* name);

// A data vector of length n (int64 or float) as integers / as doubles; checks shape and
// finiteness, naming the input.
std::vector<int64_t> read_ids(const Var& data, int64_t n, const char* loss, const char* name);
std::vector<double> read_values(const Var& data, int64_t n, const char* loss, const char* name);
// The same checks without reading the values: for a data vector that stays on its device.
void check_data_vector(const Var& data, int64_t n, const char* loss, const char* name);

// A one-element float input (log_scale, bias) as double; checks it.
double read_scalar(const Var& x, const char* loss, const char* name);

// A tensor of `like`'s dtype holding one value, shaped like `like` ([] or [1]), on its device.
Tensor scalar_like(const Var& like, double value);
// The n x n identity in `like`'s dtype, on `like`'s device (made on the host, then copied).   [n, n]
Tensor identity_like(int64_t n, const Tensor& like);

// Euclidean length of each row: x [N, d] -> [N].
Tensor row_norms(const Tensor& x);
// The gradient of each row's length, d|x_i|/dx_i = x_i / |x_i|: x [N, d], norms [N] (from
// row_norms) -> [N, d]. A zero row gets 0: |x| has a corner there and 0 is the subgradient
// chosen, so a zero distance never produces NaN.
Tensor unit_rows(const Tensor& x, const Tensor& norms);

// The slope of a mean hinge (1/N) sum_i relu(h_i) in h_i: 1/N where the hinge is active
// (h_i > 0), 0 where it is not (and at the kink h_i = 0).   hinge [N] -> [N, 1], to scale rows.
Tensor hinge_slope(const Tensor& hinge);

}  // namespace nce::losses
