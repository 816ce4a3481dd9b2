#include "engine/random.h"

namespace nce {

Tensor Generator::draw(Distribution distribution, const Shape& shape, Dtype dtype, double a, double b,
                       Device device) {
    NCE_CHECK(is_floating(dtype), "random: dtype must be float32 or float64, got {}", dtype_name(dtype));
    Tensor out = Tensor::empty(shape, dtype, device);
    backend_for(device).random(distribution, seed_, offset_, a, b, out);
    offset_ += static_cast<uint64_t>(out.numel());
    return out;
}

Tensor Generator::uniform(const Shape& shape, Dtype dtype, double low, double high, Device device) {
    return draw(Distribution::Uniform, shape, dtype, low, high, device);
}

Tensor Generator::normal(const Shape& shape, Dtype dtype, double mean, double std, Device device) {
    return draw(Distribution::Normal, shape, dtype, mean, std, device);
}

Tensor Generator::bernoulli(const Shape& shape, Dtype dtype, double probability, Device device) {
    NCE_CHECK(probability >= 0 && probability <= 1, "bernoulli: probability must be in [0, 1], got {}", probability);
    return draw(Distribution::Bernoulli, shape, dtype, probability, 0.0, device);
}

double Generator::next_uniform() { return random_bits::uniform(seed_, offset_++); }

int64_t Generator::next_index(int64_t n) {
    NCE_CHECK(n > 0, "random index: range must be positive, got {}", n);
    return static_cast<int64_t>(random_bits::bits(seed_, offset_++) % static_cast<uint64_t>(n));
}

namespace {

// Checks a dropout's input and keep probability; returns its (uninitialised) output.
Tensor dropout_output(const Tensor& x, double keep, const char* op) {
    NCE_CHECK(is_floating(x.dtype()), "{}: dtype must be float32 or float64, got {}", op, dtype_name(x.dtype()));
    NCE_CHECK(keep > 0 && keep <= 1, "{}: the keep probability must be in (0, 1], got {}", op, keep);
    return Tensor::empty(x.shape(), x.dtype(), x.device());
}

}  // namespace

Tensor apply_relu_dropout_mask(const Tensor& x, uint64_t seed, uint64_t offset, double keep) {
    Tensor out = dropout_output(x, keep, "relu_dropout");
    backend_for(x.device()).relu_dropout(x, seed, offset, keep, out);
    return out;
}

Tensor relu_dropout_backward(const Tensor& y, const Tensor& dy, double keep) {
    Tensor dx = Tensor::empty(y.shape(), y.dtype(), y.device());
    backend_for(y.device()).relu_dropout_backward(y, dy, keep, dx);
    return dx;
}

Tensor apply_dropout_mask(const Tensor& x, uint64_t seed, uint64_t offset, double keep) {
    Tensor out = dropout_output(x, keep, "dropout");
    backend_for(x.device()).dropout(x, seed, offset, keep, out);
    return out;
}

}  // namespace nce
