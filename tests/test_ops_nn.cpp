// Softmax, log-softmax, cross-entropy, layer norm and dropout (engine/ops/softmax.cpp,
// cross_entropy.cpp, layer_norm.cpp, dropout.cpp): forward values against naive loops
// written here, in both dtypes; the closed-form gradients; stability for huge logits; the
// dropout mask; and the errors for inputs that do not fit. Every backward is also checked
// against finite differences by the registered cases (test_ops_gradcheck.cpp).
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "tests/test_helpers.h"

using namespace nce;
using nce::testing::kFloatDtypes;
using nce::testing::tolerance_for;

namespace {

// Every element of `actual` against `expected` (computed in double), within the dtype's
// tolerance relative to max(1, |expected|).
void check_values(const Tensor& actual, const std::vector<double>& expected, Dtype dtype, const std::string& what) {
    CHECK_MESSAGE(actual.dtype() == dtype, what << ": dtype " << dtype_name(actual.dtype()));
    std::vector<double> values = actual.to_vector();
    REQUIRE_MESSAGE(values.size() == expected.size(), what << ": " << values.size() << " values, expected "
                                                           << expected.size());
    for (size_t i = 0; i < values.size(); ++i) {
        double error = std::abs(values[i] - expected[i]) / std::max(1.0, std::abs(expected[i]));
        CHECK_MESSAGE(error <= tolerance_for(dtype), what << ": element " << i << " is " << values[i]
                                                          << ", expected " << expected[i]);
        if (!(error <= tolerance_for(dtype))) return;  // one message per tensor is enough
    }
}

// Softmax (or log-softmax) of each row of `columns` values, by the textbook formula with the
// row max subtracted first.
std::vector<double> naive_softmax_rows(const std::vector<double>& x, int64_t columns, bool log) {
    std::vector<double> out(x.size());
    for (size_t start = 0; start < x.size(); start += columns) {
        double row_max = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < columns; ++j) row_max = std::max(row_max, x[start + j]);
        double total = 0;
        for (int64_t j = 0; j < columns; ++j) total += std::exp(x[start + j] - row_max);
        for (int64_t j = 0; j < columns; ++j)
            out[start + j] = log ? x[start + j] - row_max - std::log(total) : std::exp(x[start + j] - row_max) / total;
    }
    return out;
}

// -(1/N) sum_i log softmax(logits row i)[target_i].
double naive_cross_entropy(const std::vector<double>& logits, int64_t classes, const std::vector<int64_t>& targets) {
    std::vector<double> log_probabilities = naive_softmax_rows(logits, classes, true);
    double total = 0;
    for (size_t i = 0; i < targets.size(); ++i) total += log_probabilities[i * classes + targets[i]];
    return -total / static_cast<double>(targets.size());
}

// Layer norm of each row of `width` values: (x - mean) / sqrt(var + eps) · weight + bias,
// with the biased variance.
std::vector<double> naive_layer_norm(const std::vector<double>& x, const std::vector<double>& weight,
                                     const std::vector<double>& bias, double eps) {
    size_t width = weight.size();
    std::vector<double> out(x.size());
    for (size_t start = 0; start < x.size(); start += width) {
        double mean = 0, variance = 0;
        for (size_t j = 0; j < width; ++j) mean += x[start + j];
        mean /= static_cast<double>(width);
        for (size_t j = 0; j < width; ++j) variance += (x[start + j] - mean) * (x[start + j] - mean);
        variance /= static_cast<double>(width);
        for (size_t j = 0; j < width; ++j)
            out[start + j] = (x[start + j] - mean) / std::sqrt(variance + eps) * weight[j] + bias[j];
    }
    return out;
}

}  // namespace

// ---- softmax, log_softmax ----

TEST_CASE("softmax, log_softmax: forward equals naive loops over the last axis, both dtypes") {
    for (Dtype dtype : kFloatDtypes) {
        for (const Shape& shape : {Shape{3, 5}, Shape{2, 3, 4}, Shape{7}}) {
            Generator generator(3);
            Tensor x = generator.normal(shape, dtype, 0.0, 3.0);
            std::vector<double> values = x.to_vector();
            std::string what = shape_string(shape) + " " + dtype_name(dtype);
            check_values(softmax(Var(x)).value(), naive_softmax_rows(values, shape.back(), false), dtype,
                         "softmax " + what);
            check_values(log_softmax(Var(x)).value(), naive_softmax_rows(values, shape.back(), true), dtype,
                         "log_softmax " + what);
        }
    }
}

TEST_CASE("softmax, log_softmax: logits like [1000, -1000, 0] give finite rows that sum to 1") {
    for (Dtype dtype : kFloatDtypes) {
        Tensor x = Tensor::from_vector({1000, -1000, 0, -5000, 3000, 2999}, {2, 3}, dtype);
        Tensor probabilities = softmax(Var(x)).value();
        Tensor log_probabilities = log_softmax(Var(x)).value();
        CHECK(all_finite(probabilities));
        CHECK(all_finite(log_probabilities));
        std::vector<double> p = probabilities.to_vector();
        CHECK(p[0] + p[1] + p[2] == doctest::Approx(1.0).epsilon(tolerance_for(dtype)));
        CHECK(p[3] + p[4] + p[5] == doctest::Approx(1.0).epsilon(tolerance_for(dtype)));
        CHECK(p[0] == 1.0);
        // log softmax keeps the information softmax rounds away: -2000, not -inf.
        check_values(log_probabilities, {0, -2000, -1000, -8000 - std::log1p(std::exp(-1.0)),
                                         -std::log1p(std::exp(-1.0)), -1 - std::log1p(std::exp(-1.0))},
                     dtype, "log_softmax of huge logits");
    }
}

TEST_CASE("softmax, log_softmax: backward equals the Jacobian-vector product written out by loops") {
    // softmax: dy_j/dx_i = y_j (δ_ij - y_i);  log_softmax: dy_j/dx_i = δ_ij - softmax_i.
    int64_t rows = 3, columns = 4;
    Generator generator(5);
    Tensor x = generator.normal({rows, columns}, Dtype::Float64);
    Tensor upstream = generator.normal({rows, columns}, Dtype::Float64);
    std::vector<double> p = naive_softmax_rows(x.to_vector(), columns, false), g = upstream.to_vector();
    std::vector<double> softmax_dx(p.size(), 0.0), log_softmax_dx(p.size(), 0.0);
    for (int64_t r = 0; r < rows; ++r) {
        for (int64_t i = 0; i < columns; ++i) {
            for (int64_t j = 0; j < columns; ++j) {
                double delta = i == j ? 1.0 : 0.0;
                int64_t at_i = r * columns + i, at_j = r * columns + j;
                softmax_dx[at_i] += g[at_j] * p[at_j] * (delta - p[at_i]);
                log_softmax_dx[at_i] += g[at_j] * (delta - p[at_i]);
            }
        }
    }
    Var input = Var::parameter(x);
    softmax(input).backward(upstream);
    check_values(input.grad(), softmax_dx, Dtype::Float64, "softmax dx");
    input.zero_grad();
    log_softmax(input).backward(upstream);
    check_values(input.grad(), log_softmax_dx, Dtype::Float64, "log_softmax dx");
}

TEST_CASE("softmax, log_softmax: bad input is an error naming the op") {
    CHECK_ERROR_MENTIONS(softmax(Var(Tensor::from_indices({1, 2}, {2}))), "softmax");
    CHECK_ERROR_MENTIONS(log_softmax(Var(Tensor::scalar(1.0, Dtype::Float64))), "log_softmax");
}

// ---- cross_entropy ----

TEST_CASE("cross_entropy: forward equals a naive -mean(log softmax[target]), both dtypes") {
    for (Dtype dtype : kFloatDtypes) {
        Generator generator(7);
        Tensor logits = generator.normal({5, 4}, dtype, 0.0, 2.0);
        std::vector<int64_t> targets = {0, 3, 1, 1, 2};
        Var loss = cross_entropy(Var(logits), Tensor::from_indices(targets, {5}));
        CHECK(loss.shape() == Shape{});
        check_values(loss.value(), {naive_cross_entropy(logits.to_vector(), 4, targets)}, dtype, "cross_entropy");
    }
}

TEST_CASE("cross_entropy: gradient is (softmax - onehot) / N, scaled by the upstream gradient") {
    int64_t rows = 4, classes = 3;
    Generator generator(9);
    Tensor logits = generator.normal({rows, classes}, Dtype::Float64);
    std::vector<int64_t> targets = {2, 0, 0, 1};
    std::vector<double> p = naive_softmax_rows(logits.to_vector(), classes, false);
    std::vector<double> expected(p.size());
    for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < classes; ++j)
            expected[i * classes + j] = (p[i * classes + j] - (j == targets[i] ? 1.0 : 0.0)) / rows;

    Var x = Var::parameter(logits);
    cross_entropy(x, Tensor::from_indices(targets, {rows})).backward();
    // Exact up to the last bit of exp: the fused backward is the closed form itself.
    CHECK(max_abs_difference(x.grad(), Tensor::from_vector(expected, {rows, classes}, Dtype::Float64)) < 1e-16);

    x.zero_grad();
    cross_entropy(x, Tensor::from_indices(targets, {rows})).backward(Tensor::scalar(2.5, Dtype::Float64));
    for (double& value : expected) value *= 2.5;
    CHECK(max_abs_difference(x.grad(), Tensor::from_vector(expected, {rows, classes}, Dtype::Float64)) < 1e-15);
}

TEST_CASE("cross_entropy: stable for logits in the thousands") {
    for (Dtype dtype : kFloatDtypes) {
        std::vector<double> values = {1000, -1000, 0, -3000, 2000, 1999, 4000, 4000, 4000};
        std::vector<int64_t> targets = {1, 2, 0};
        Var logits = Var::parameter(Tensor::from_vector(values, {3, 3}, dtype));
        Var loss = cross_entropy(logits, Tensor::from_indices(targets, {3}));
        // Row losses: 2000, 1 + log(1 + e^-1), log 3.
        CHECK(loss.value().item() == doctest::Approx((2000 + 1 + std::log1p(std::exp(-1.0)) + std::log(3.0)) / 3)
                                         .epsilon(tolerance_for(dtype)));
        loss.backward();
        CHECK(all_finite(logits.grad()));
        check_values(logits.grad(), {1.0 / 3, -1.0 / 3, 0, 0, 1 / (1 + std::exp(-1.0)) / 3,
                                     (1 / (1 + std::exp(1.0)) - 1) / 3, (1.0 / 3 - 1) / 3, 1.0 / 9, 1.0 / 9},
                     dtype, "gradient at huge logits");
    }
}

TEST_CASE("cross_entropy: bad targets and logits are errors naming the problem") {
    Tensor logits = Tensor::zeros({3, 4}, Dtype::Float64);
    CHECK_ERROR_MENTIONS(cross_entropy(Var(logits), Tensor::from_indices({0, 4, 1}, {3})), "target 4");
    CHECK_ERROR_MENTIONS(cross_entropy(Var(logits), Tensor::from_indices({0, 4, 1}, {3})), "C = 4");
    CHECK_ERROR_MENTIONS(cross_entropy(Var(logits), Tensor::from_indices({-1, 0, 1}, {3})), "target -1");
    CHECK_ERROR_MENTIONS(cross_entropy(Var(logits), Tensor::from_indices({0, 1}, {2})), "[3]");
    CHECK_ERROR_MENTIONS(cross_entropy(Var(logits), Tensor::from_vector({0, 1, 2}, {3}, Dtype::Float64)), "int64");
    Tensor three_axes = Tensor::zeros({2, 3, 4}, Dtype::Float64);
    CHECK_ERROR_MENTIONS(cross_entropy(Var(three_axes), Tensor::from_indices({0, 1}, {2})), "[N, C]");
    CHECK_ERROR_MENTIONS(cross_entropy(Var(Tensor::zeros({0, 4}, Dtype::Float64)), Tensor::from_indices({}, {0})),
                         "no rows");
    CHECK_ERROR_MENTIONS(cross_entropy(Var(logits), Tensor()), "targets are missing");
}

// ---- layer_norm ----

TEST_CASE("layer_norm: forward equals naive loops with weight and bias, both dtypes") {
    for (Dtype dtype : kFloatDtypes) {
        for (const Shape& shape : {Shape{4, 6}, Shape{2, 3, 5}}) {
            Generator generator(13);
            int64_t width = shape.back();
            Tensor x = generator.normal(shape, dtype, 1.5, 2.0);
            Tensor weight = generator.normal({width}, dtype), bias = generator.normal({width}, dtype);
            Var y = layer_norm(Var(x), Var(weight), Var(bias));
            CHECK(y.shape() == shape);
            check_values(y.value(), naive_layer_norm(x.to_vector(), weight.to_vector(), bias.to_vector(), 1e-5), dtype,
                         "layer_norm " + shape_string(shape) + " " + dtype_name(dtype));
        }
    }
}

TEST_CASE("layer_norm: each row has mean 0 and variance 1 before the affine step") {
    for (Dtype dtype : kFloatDtypes) {
        int64_t rows = 6, width = 50;
        Generator generator(17);
        Tensor x = generator.normal({rows, width}, dtype, -4.0, 3.0);
        double eps = 1e-5;
        Tensor y = layer_norm(Var(x), Var(Tensor::full({width}, 1.0, dtype)), Var(Tensor::zeros({width}, dtype)), eps)
                       .value();
        std::vector<double> values = y.to_vector(), inputs = x.to_vector();
        for (int64_t r = 0; r < rows; ++r) {
            double mean = 0, variance = 0, input_mean = 0, input_variance = 0;
            for (int64_t j = 0; j < width; ++j) {
                mean += values[r * width + j] / width;
                input_mean += inputs[r * width + j] / width;
            }
            for (int64_t j = 0; j < width; ++j) {
                variance += (values[r * width + j] - mean) * (values[r * width + j] - mean) / width;
                input_variance += (inputs[r * width + j] - input_mean) * (inputs[r * width + j] - input_mean) / width;
            }
            CHECK(std::abs(mean) < 10 * tolerance_for(dtype));
            // Exactly var / (var + eps): eps is what keeps it just under 1.
            double expected_variance = input_variance / (input_variance + eps);
            CHECK(variance == doctest::Approx(expected_variance).epsilon(10 * tolerance_for(dtype)));
        }
    }
}

// One step of the derivation in engine/ops/layer_norm.cpp, on its own: for one row,
// d rstd / dx_i = -(rstd^2 / D) · xhat_i  (not -(rstd / D) · xhat_i), by central differences.
TEST_CASE("layer_norm derivation: d rstd / dx_i = -(rstd^2 / D) xhat_i, by central differences") {
    const std::vector<double> x = {0.3, -1.2, 2.5, 0.7, -0.4};
    const double D = static_cast<double>(x.size()), eps = 1e-5;
    auto rstd_of = [&](const std::vector<double>& row) {
        double mean = 0, variance = 0;
        for (double value : row) mean += value / D;
        for (double value : row) variance += (value - mean) * (value - mean) / D;
        return 1.0 / std::sqrt(variance + eps);
    };
    double mean = 0;
    for (double value : x) mean += value / D;
    const double rstd = rstd_of(x);
    for (size_t i = 0; i < x.size(); ++i) {
        std::vector<double> up = x, down = x;
        up[i] += 1e-6;
        down[i] -= 1e-6;
        double numeric = (rstd_of(up) - rstd_of(down)) / 2e-6;
        double xhat = (x[i] - mean) * rstd;
        double derived = -(rstd * rstd / D) * xhat;
        CHECK(numeric == doctest::Approx(derived).epsilon(1e-7));
        CHECK(std::abs(numeric - (-(rstd / D) * xhat)) > 1e-3 * std::abs(numeric));  // the one-rstd form is wrong
    }
}

TEST_CASE("layer_norm: the gradients of weight and bias are the row sums of dy ⊙ xhat and dy") {
    int64_t rows = 3, width = 4;
    Generator generator(19);
    Tensor x = generator.normal({rows, width}, Dtype::Float64);
    Tensor upstream = generator.normal({rows, width}, Dtype::Float64);
    Var weight = Var::parameter(generator.normal({width}, Dtype::Float64));
    Var bias = Var::parameter(generator.normal({width}, Dtype::Float64));
    layer_norm(Var(x), weight, bias).backward(upstream);
    std::vector<double> xhat = naive_layer_norm(x.to_vector(), std::vector<double>(width, 1.0),
                                                std::vector<double>(width, 0.0), 1e-5);
    std::vector<double> g = upstream.to_vector(), dweight(width, 0.0), dbias(width, 0.0);
    for (int64_t r = 0; r < rows; ++r) {
        for (int64_t j = 0; j < width; ++j) {
            dweight[j] += g[r * width + j] * xhat[r * width + j];
            dbias[j] += g[r * width + j];
        }
    }
    check_values(weight.grad(), dweight, Dtype::Float64, "dweight");
    check_values(bias.grad(), dbias, Dtype::Float64, "dbias");
}

TEST_CASE("layer_norm: bad shapes, dtypes and eps are errors naming the op and the input") {
    Tensor x = Tensor::zeros({2, 4}, Dtype::Float64);
    Var weight(Tensor::full({4}, 1.0, Dtype::Float64)), bias(Tensor::zeros({4}, Dtype::Float64));
    CHECK_ERROR_MENTIONS(layer_norm(Var(x), Var(Tensor::zeros({3}, Dtype::Float64)), bias), "weight [3]");
    CHECK_ERROR_MENTIONS(layer_norm(Var(x), weight, Var(Tensor::zeros({4, 1}, Dtype::Float64))), "bias [4, 1]");
    CHECK_ERROR_MENTIONS(layer_norm(Var(x), Var(Tensor::full({4}, 1.0, Dtype::Float32)), bias), "float32");
    CHECK_ERROR_MENTIONS(layer_norm(Var(x), weight, bias, 0.0), "eps");
    CHECK_ERROR_MENTIONS(layer_norm(Var(x), weight, bias, -1e-5), "eps");
    CHECK_ERROR_MENTIONS(layer_norm(Var(Tensor::zeros({2, 0}, Dtype::Float64)), Var(Tensor::zeros({0}, Dtype::Float64)),
                                    Var(Tensor::zeros({0}, Dtype::Float64))),
                         "last axis");
    CHECK_ERROR_MENTIONS(layer_norm(Var(Tensor::from_indices({1, 2, 3, 4}, {1, 4})), weight, bias), "layer_norm");
}

// ---- dropout ----

TEST_CASE("dropout: the same seed gives the same mask, another seed another") {
    for (Dtype dtype : kFloatDtypes) {
        Tensor x = Tensor::full({8, 16}, 1.0, dtype);
        Generator first(42), second(42), other(43);
        std::vector<double> a = dropout(Var(x), 0.5, first, true).value().to_vector();
        CHECK(a == dropout(Var(x), 0.5, second, true).value().to_vector());
        CHECK(a != dropout(Var(x), 0.5, other, true).value().to_vector());
        // The generator moves on: a second call draws a new mask.
        CHECK(a != dropout(Var(x), 0.5, first, true).value().to_vector());
    }
}

TEST_CASE("dropout: about a fraction p is zeroed and the rest scaled by 1/(1-p)") {
    for (double p : {0.1, 0.5, 0.8}) {
        Generator generator(1);
        Tensor x = generator.normal({200, 500}, Dtype::Float64);
        std::vector<double> inputs = x.to_vector();
        std::vector<double> outputs = dropout(Var(x), p, generator, true).value().to_vector();
        int64_t zeros = 0;
        bool kept_values_scaled = true;
        for (size_t i = 0; i < outputs.size(); ++i) {
            if (outputs[i] == 0)
                ++zeros;
            else
                kept_values_scaled &= std::abs(outputs[i] - inputs[i] / (1 - p)) <= 1e-12 * std::abs(outputs[i]);
        }
        // 100000 draws: the standard deviation of the fraction is at most 0.0016.
        double zero_fraction = static_cast<double>(zeros) / static_cast<double>(outputs.size());
        CAPTURE(zero_fraction);
        CHECK(std::abs(zero_fraction - p) < 0.01);
        CHECK(kept_values_scaled);
    }
}

TEST_CASE("dropout: the gradient is the same mask scaled by 1/(1-p)") {
    double p = 0.25;
    Generator generator(21);
    Var x = Var::parameter(generator.uniform({10, 10}, Dtype::Float64, 1.0, 2.0));  // no zeros in x
    Tensor upstream = generator.normal({10, 10}, Dtype::Float64);
    Var y = dropout(x, p, generator, true);
    y.backward(upstream);
    std::vector<double> outputs = y.value().to_vector(), g = upstream.to_vector(), expected(g.size());
    for (size_t i = 0; i < g.size(); ++i) expected[i] = outputs[i] == 0 ? 0.0 : g[i] / (1 - p);
    check_values(x.grad(), expected, Dtype::Float64, "dropout dx");
}

// The definition in random.h, spelled out with random_bits: element i of a fill at offset o
// is the high (even i) or low (odd i) 32 bits of draw o + i/2, kept below ceil(p · 2^32).
// Odd sizes and offsets, and sizes that split over the threads, hit every parity.
TEST_CASE("bernoulli: element i is half of draw offset + i/2 below ceil(p · 2^32), for any split") {
    for (uint64_t start : {uint64_t{0}, uint64_t{1}, uint64_t{12345}}) {
        for (int64_t n : {1, 2, 7, 4097, 20001}) {
            const double p = 0.3;
            Generator generator(8);
            generator.set_offset(start);
            std::vector<double> drawn = generator.bernoulli({n}, Dtype::Float64, p).to_vector();
            CHECK(generator.offset() == start + static_cast<uint64_t>(n));
            const uint64_t threshold = static_cast<uint64_t>(std::ceil(p * 0x1.0p32));
            int64_t wrong = 0;
            for (int64_t i = 0; i < n; ++i) {
                uint64_t draw = random_bits::bits(8, start + static_cast<uint64_t>(i) / 2);
                uint64_t half = i % 2 == 0 ? draw >> 32 : draw & 0xffffffffULL;
                wrong += drawn[static_cast<size_t>(i)] != (half < threshold ? 1.0 : 0.0);
            }
            CHECK_MESSAGE(wrong == 0, "n " << n << " offset " << start << ": " << wrong << " elements differ");
        }
    }
}

// The one-pass kernel (mask drawn inside it, not stored) against the two-step form it
// replaced: mask = bernoulli(1 - p) from the same seed and offset, y = x · (mask / (1 - p)),
// dx = dy · (mask / (1 - p)). Equal to the bit, over sizes that cross the threads' chunks.
TEST_CASE("dropout: the one-pass kernel equals the two-step reference x · bernoulli(1 - p) / (1 - p)") {
    for (Dtype dtype : kFloatDtypes) {
        for (double p : {0.1, 0.5}) {
            for (const Shape& shape : {Shape{7}, Shape{37, 129}, Shape{3, 4, 5000}}) {
                Generator data(5);
                Var x = Var::parameter(data.normal(shape, dtype));
                Tensor upstream = data.normal(shape, dtype);
                Generator fused(77), reference(77);
                fused.set_offset(1234);
                reference.set_offset(1234);

                Var y = dropout(x, p, fused, true);
                y.backward(upstream);
                Tensor scaled_mask = reference.bernoulli(shape, dtype, 1 - p) * (1 / (1 - p));
                std::string what = shape_string(shape) + " p " + std::to_string(p) + " " + dtype_name(dtype);
                CHECK_MESSAGE(y.value().to_vector() == (x.value() * scaled_mask).to_vector(), "y " << what);
                CHECK_MESSAGE(x.grad().to_vector() == (upstream * scaled_mask).to_vector(), "dx " << what);
                CHECK_MESSAGE(fused.offset() == reference.offset(), "draws consumed " << what);
            }
        }
    }
}

TEST_CASE("relu_dropout: equals dropout(relu(x)) to the bit, forward and backward, with the same draws") {
    for (Dtype dtype : kFloatDtypes) {
        for (double p : {0.1, 0.5}) {
            for (const Shape& shape : {Shape{9}, Shape{37, 129}, Shape{3, 4, 5000}}) {
                Generator data(6);
                Tensor x = data.normal(shape, dtype), upstream = data.normal(shape, dtype);
                Var fused_input = Var::parameter(x), composed_input = Var::parameter(x);
                Generator fused_generator(13), composed_generator(13);
                fused_generator.set_offset(77);
                composed_generator.set_offset(77);
                Var fused = relu_dropout(fused_input, p, fused_generator, true);
                Var composed = dropout(relu(composed_input), p, composed_generator, true);
                fused.backward(upstream);
                composed.backward(upstream);
                std::string what = shape_string(shape) + " p " + std::to_string(p) + " " + dtype_name(dtype);
                CHECK_MESSAGE(fused.value().to_vector() == composed.value().to_vector(), "y " << what);
                CHECK_MESSAGE(fused_input.grad().to_vector() == composed_input.grad().to_vector(), "dx " << what);
                CHECK_MESSAGE(fused_generator.offset() == composed_generator.offset(), "draws " << what);
            }
        }
    }
    Generator generator(1);
    Var x(Tensor::from_vector({-1.0, 2.0}, {2}, Dtype::Float64));
    CHECK(relu_dropout(x, 0.3, generator, false).value().to_vector() == std::vector<double>{0.0, 2.0});
    CHECK(generator.offset() == 0);
    CHECK_ERROR_MENTIONS(relu_dropout(x, 1.0, generator, true), "relu_dropout: p must be in [0, 1)");
}

TEST_CASE("dropout: identity in eval mode and for p = 0, without drawing from the generator") {
    for (Dtype dtype : kFloatDtypes) {
        Generator generator(5);
        Tensor x = generator.normal({4, 4}, dtype);
        uint64_t offset = generator.offset();
        CHECK(dropout(Var(x), 0.5, generator, false).value().to_vector() == x.to_vector());
        CHECK(dropout(Var(x), 0.0, generator, true).value().to_vector() == x.to_vector());
        CHECK(generator.offset() == offset);
    }
}

TEST_CASE("dropout: p outside [0, 1) is an error naming p") {
    Generator generator(1);
    Var x(Tensor::zeros({2, 2}, Dtype::Float64));
    for (double p : {-0.1, 1.0, 1.5, std::nan("")}) {
        CAPTURE(p);
        CHECK_ERROR_MENTIONS(dropout(x, p, generator, true), "dropout: p must be in [0, 1)");
        CHECK_ERROR_MENTIONS(dropout(x, p, generator, false), "dropout: p must be in [0, 1)");
    }
}
