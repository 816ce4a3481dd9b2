// The CUDA backend against the CPU backend, op by op, forward and backward
// (tests/cuda_parity_harness.h): float64 to 1e-12, float32 to 1e-5. In meson test this runs
// the host-run build of the CUDA backend; linked with the real one on a GPU machine, the
// same cases run on the device (tests/test_cuda_parity_main.cpp).
#include <doctest/doctest.h>

#include <limits>

#include "engine/cuda/cuda_backend.h"
#include "losses/contrastive.h"
#include "losses/infonce.h"
#include "losses/infonce_symmetric.h"
#include "tests/cuda_parity_harness.h"
#include "tests/test_helpers.h"

using namespace nce;
using namespace nce::testing;

namespace {

// A Var op of one input as a ParityFunction.
ParityFunction one(Var (*op)(const Var&)) {
    return [op](const std::vector<Var>& x, Device) { return op(x[0]); };
}

// Values with many exact ties (integers in [-3, 3]), for max's first-argmax rule.
Tensor tied_values(const Shape& shape, uint64_t seed) {
    std::vector<double> values = parity_values(shape, seed, -3.5, 3.5).to_vector();
    for (double& v : values) v = static_cast<double>(static_cast<int64_t>(v));
    return Tensor::from_vector(values, shape, Dtype::Float64);
}

}  // namespace

TEST_CASE("cuda parity: copies to the device and back are exact, in and across dtypes") {
    const Tensor x = parity_values({3, 5}, 1);
    CHECK(x.to(Device::CUDA).device() == Device::CUDA);
    CHECK(x.to(Device::CUDA).to(Device::CPU).to_vector() == x.to_vector());
    // Converted on the device, and while crossing (either direction).
    CHECK(x.to(Device::CUDA).to(Dtype::Float32).to(Device::CPU).to_vector() == x.to(Dtype::Float32).to_vector());
    CHECK(x.to(Device::CUDA).to(Dtype::Float32).to(Dtype::Float64).to(Device::CPU).to_vector() ==
          x.to(Dtype::Float32).to(Dtype::Float64).to_vector());
    Tensor host32 = Tensor::empty({3, 5}, Dtype::Float32);
    backend_for(Device::CUDA).copy(x.to(Device::CUDA), host32);
    CHECK(host32.to_vector() == x.to(Dtype::Float32).to_vector());
    Tensor device32 = Tensor::empty({3, 5}, Dtype::Float32, Device::CUDA);
    backend_for(Device::CUDA).copy(x, device32);
    CHECK(device32.to(Device::CPU).to_vector() == x.to(Dtype::Float32).to_vector());
    const Tensor indices = Tensor::from_indices({4, -2, 0, 1LL << 40}, {2, 2});
    CHECK(indices.to(Device::CUDA).to(Device::CPU).to_indices() == indices.to_indices());
    CHECK(indices.to(Device::CUDA).to(Dtype::Float64).to(Device::CPU).to_vector() == indices.to(Dtype::Float64).to_vector());
    CHECK(x.to(Device::CUDA).clone().to(Device::CPU).to_vector() == x.to_vector());
    CHECK(Tensor::full({2, 3}, 2.5, Dtype::Float32, Device::CUDA).to_vector() == std::vector<double>(6, 2.5));
    CHECK(Tensor::zeros({4}, Dtype::Int64, Device::CUDA).to_indices() == std::vector<int64_t>(4, 0));
    CHECK(sum(x.to(Device::CUDA)).item() == doctest::Approx(sum(x).item()).epsilon(1e-14));
    CHECK(Tensor::empty({0, 3}, Dtype::Float64, Device::CUDA).to(Device::CPU).numel() == 0);
}

TEST_CASE("cuda parity: all_finite on the device finds a NaN or an inf anywhere, in any shape and dtype") {
    const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
    for (Dtype dtype : {Dtype::Float64, Dtype::Float32})
        for (const Shape& shape : {Shape{}, Shape{7}, Shape{3, 5}, Shape{2, 3, 4}}) {
            INFO(std::string(dtype_name(dtype)) << " " << shape_string(shape));
            std::vector<double> values = parity_values(shape, 3).to_vector();
            // Near float32's largest: finite, though a plain sum of two of them would not be.
            values[0] = 3e38;
            values[values.size() - 1] = values.size() > 1 ? 3e38 : values[0];
            CHECK(all_finite(Tensor::from_vector(values, shape, dtype).to(Device::CUDA)));
            for (size_t at : {size_t{0}, values.size() / 2, values.size() - 1})
                for (double bad : {nan, inf, -inf}) {
                    std::vector<double> with_bad = values;
                    with_bad[at] = bad;
                    CHECK_FALSE(all_finite(Tensor::from_vector(with_bad, shape, dtype).to(Device::CUDA)));
                }
        }
    CHECK(all_finite(Tensor::empty({0, 3}, Dtype::Float32, Device::CUDA)));
    // A loss's input check on the device names the input; the InfoNCE family reads nothing
    // back before its loss, so there a NaN input shows as a NaN loss (and on the host as the error).
    std::vector<double> q = parity_values({4, 3}, 4).to_vector();
    q[5] = nan;
    const Var bad_q(Tensor::from_vector(q, {4, 3}, Dtype::Float32).to(Device::CUDA));
    const Var p(parity_values({4, 3}, 5).to(Dtype::Float32).to(Device::CUDA));
    CHECK_ERROR_MENTIONS(losses::contrastive(bad_q, p, Tensor::full({4}, 1.0, Dtype::Float32).to(Device::CUDA)),
                         "contains NaN or Inf");
    CHECK(std::isnan(losses::infonce(bad_q, p, Var(), Var(), 0.1).value().item()));
    CHECK(std::isnan(losses::infonce_symmetric(bad_q, p, Var(), Var(), 0.1).value().item()));
    CHECK_ERROR_MENTIONS(losses::infonce(Var(bad_q.value().to(Device::CPU)), Var(p.value().to(Device::CPU)), Var(), Var(), 0.1),
                         "contains NaN or Inf");
}

TEST_CASE("cuda parity: the backend refuses a tensor on the wrong device") {
    const Tensor host = parity_values({2, 3}, 2);
    Tensor out = Tensor::empty({2, 3}, Dtype::Float64, Device::CUDA);
    CHECK_ERROR_MENTIONS(backend_for(Device::CUDA).unary(UnaryOp::Exp, host, out), "not cuda");
    CHECK_ERROR_MENTIONS(add(host, host.to(Device::CUDA)), "different devices");
    CHECK_ERROR_MENTIONS(host.to(Device::CUDA).data<double>(), "to(Device::CPU)");
    Tensor probabilities = Tensor::empty({2, 3}, Dtype::Float64, Device::CUDA);
    CHECK_ERROR_MENTIONS(backend_for(Device::CUDA).softmax_last_axis(host, probabilities, false), "not cuda");
}

TEST_CASE("cuda parity: the device allocator reuses a released buffer of the same size class") {
    Backend& cuda = backend_for(Device::CUDA);
    void* first = cuda.allocate(1000);
    cuda.release(first, 1000);
    void* second = cuda.allocate(1010);  // the same class (1024)
    CHECK(second == first);
    cuda.release(second, 1010);
}

TEST_CASE("cuda parity: unary ops, forward and backward") {
    const Tensor x = parity_values({4, 7}, 3, -3, 3);
    const Tensor positive = parity_values({4, 7}, 4, 0.2, 3);
    check_parity_both("exp", one(nce::exp), {x});
    check_parity_both("tanh", one(nce::tanh), {x});
    check_parity_both("sigmoid", one(nce::sigmoid), {x});
    check_parity_both("relu", one(nce::relu), {x});
    check_parity_both("neg", [](const std::vector<Var>& v, Device) { return -v[0]; }, {x});
    check_parity_both("log", one(nce::log), {positive});
    check_parity_both("sqrt", one(nce::sqrt), {positive});
    check_parity_both("pow 2.5", [](const std::vector<Var>& v, Device) { return pow(v[0], 2.5); }, {positive});
    check_parity_both("gelu erf", [](const std::vector<Var>& v, Device) { return gelu(v[0], GeluApproximation::Erf); },
                      {x});
    check_parity_both("gelu tanh",
                      [](const std::vector<Var>& v, Device) { return gelu(v[0], GeluApproximation::Tanh); }, {x});
}

TEST_CASE("cuda parity: every UnaryOp kernel, exp(-inf) = 0 exactly") {
    const Tensor x = parity_values({3, 9}, 5, -4, 4);
    const Tensor positive = parity_values({3, 9}, 6, 0.1, 4);
    for (UnaryOp op : {UnaryOp::Neg, UnaryOp::Exp, UnaryOp::Tanh, UnaryOp::Sigmoid, UnaryOp::Relu, UnaryOp::Abs,
                       UnaryOp::Square, UnaryOp::Reciprocal, UnaryOp::Step, UnaryOp::GeluErf, UnaryOp::GeluTanh,
                       UnaryOp::GeluErfDerivative, UnaryOp::GeluTanhDerivative})
        check_tensor_parity(fmt::format("unary op {}", static_cast<int>(op)),
                            [op](const std::vector<Tensor>& t) { return unary(op, t[0]); }, {x});
    for (UnaryOp op : {UnaryOp::Log, UnaryOp::Sqrt})
        check_tensor_parity(fmt::format("unary op {}", static_cast<int>(op)),
                            [op](const std::vector<Tensor>& t) { return unary(op, t[0]); }, {positive});
    const double inf = std::numeric_limits<double>::infinity();
    const Tensor extremes = Tensor::from_vector({-inf, -800, -100, -80, 0, 80}, {6}, Dtype::Float64);
    check_tensor_parity("exp at the extremes", [](const std::vector<Tensor>& t) { return exp(t[0]); }, {extremes});
    CHECK(exp(extremes.to(Device::CUDA)).to(Device::CPU).at(0) == 0.0);
}

TEST_CASE("cuda parity: broadcasting binary ops, forward and backward (sum_to in the backward)") {
    const std::vector<std::pair<Shape, Shape>> shapes = {
        {{3, 4}, {3, 4}}, {{3, 4}, {4}}, {{4}, {3, 4}}, {{2, 3, 4}, {3, 1}}, {{1, 4}, {3, 1}},
        {{2, 1, 5}, {2, 3, 1}}, {{5}, {}}, {{}, {2, 2}}, {{2, 3, 1, 2, 1}, {4, 1, 3}},
    };
    for (const auto& [a_shape, b_shape] : shapes) {
        const Tensor a = parity_values(a_shape, 7), b = parity_values(b_shape, 8, 0.5, 2);
        const std::string shapes_named = shape_string(a_shape) + " and " + shape_string(b_shape);
        check_parity_both("add " + shapes_named, [](const std::vector<Var>& v, Device) { return v[0] + v[1]; }, {a, b});
        check_parity_both("sub " + shapes_named, [](const std::vector<Var>& v, Device) { return v[0] - v[1]; }, {a, b});
        check_parity_both("mul " + shapes_named, [](const std::vector<Var>& v, Device) { return v[0] * v[1]; }, {a, b});
        check_parity_both("div " + shapes_named, [](const std::vector<Var>& v, Device) { return v[0] / v[1]; }, {a, b});
        check_parity_both("pow " + shapes_named, [](const std::vector<Var>& v, Device) { return pow(v[1], v[0]); },
                          {a, b});
        for (BinaryOp op : {BinaryOp::Maximum, BinaryOp::Minimum, BinaryOp::Greater})
            check_tensor_parity(fmt::format("binary op {} {}", static_cast<int>(op), shapes_named),
                                [op](const std::vector<Tensor>& t) { return binary(op, t[0], t[1]); }, {a, b});
    }
    const Tensor big = parity_values({3, 4, 5}, 9);
    check_tensor_parity("sum_to [3, 4, 5] -> [4, 1]",
                        [](const std::vector<Tensor>& t) { return sum_to(t[0], {4, 1}); }, {big});
    check_tensor_parity("sum_to [3, 4, 5] -> []", [](const std::vector<Tensor>& t) { return sum_to(t[0], {}); }, {big});
}

TEST_CASE("cuda parity: scalar ops, forward and backward") {
    const Tensor x = parity_values({5, 3}, 10, 0.5, 2);
    check_parity_both("x + s", [](const std::vector<Var>& v, Device) { return v[0] + 1.5; }, {x});
    check_parity_both("x - s", [](const std::vector<Var>& v, Device) { return v[0] - 0.25; }, {x});
    check_parity_both("s - x", [](const std::vector<Var>& v, Device) { return 2.0 - v[0]; }, {x});
    check_parity_both("x * s", [](const std::vector<Var>& v, Device) { return v[0] * -3.0; }, {x});
    check_parity_both("x / s", [](const std::vector<Var>& v, Device) { return v[0] / 7.0; }, {x});
    for (BinaryOp op : {BinaryOp::Pow, BinaryOp::Maximum, BinaryOp::Minimum, BinaryOp::Greater})
        check_tensor_parity(fmt::format("scalar op {}", static_cast<int>(op)),
                            [op](const std::vector<Tensor>& t) { return binary_scalar(op, t[0], 1.1); }, {x});
}

TEST_CASE("cuda parity: reductions, forward and backward, first maximum on ties") {
    const Tensor x = parity_values({3, 4, 5}, 11);
    for (int64_t axis : {0, 1, 2, -1})
        for (bool keepdim : {false, true}) {
            const std::string at = fmt::format(" axis {} keepdim {}", axis, keepdim);
            check_parity_both("sum" + at, [=](const std::vector<Var>& v, Device) { return sum(v[0], axis, keepdim); },
                              {x});
            check_parity_both("mean" + at,
                              [=](const std::vector<Var>& v, Device) { return mean(v[0], axis, keepdim); }, {x});
            // The forward and the argmax on ties (the backward: tests/test_cuda_parity_ops.cpp).
            check_tensor_parity("max" + at, [=](const std::vector<Tensor>& t) { return max(t[0], axis, keepdim).values; },
                                {tied_values({3, 4, 5}, 12)});
            check_tensor_parity("argmax" + at, [=](const std::vector<Tensor>& t) { return max(t[0], axis).indices; },
                                {tied_values({3, 4, 5}, 13)});
        }
    check_parity_both("sum of all", [](const std::vector<Var>& v, Device) { return sum(v[0]); }, {x});
    check_parity_both("mean of all", [](const std::vector<Var>& v, Device) { return mean(v[0]); }, {x});
    check_tensor_parity("max of all", [](const std::vector<Tensor>& t) { return max(t[0]); },
                        {tied_values({3, 4, 5}, 14)});
    // One long sum, summed in blocks of 8192 on both backends.
    const Tensor long_row = parity_values({20001}, 15);
    check_parity_both("sum of 20001", [](const std::vector<Var>& v, Device) { return sum(v[0]); }, {long_row});
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const Tensor with_nan = Tensor::from_vector({1, nan, 3, 2}, {1, 4}, Dtype::Float64);
    CHECK(max(with_nan.to(Device::CUDA), 1).indices.to_indices() == std::vector<int64_t>{1});
    CHECK(sum(Tensor::zeros({0, 3}, Dtype::Float64, Device::CUDA), 0).to_vector() == std::vector<double>(3, 0.0));
}

TEST_CASE("cuda parity: layout ops, forward and backward") {
    const Tensor x = parity_values({2, 3, 4}, 16);
    check_parity_both("reshape", [](const std::vector<Var>& v, Device) { return reshape(v[0], {6, -1}) * 1.0; }, {x});
    for (std::vector<int64_t> axes : {std::vector<int64_t>{2, 0, 1}, {1, 0, 2}, {0, 2, 1}, {2, 1, 0}})
        check_parity_both(fmt::format("permute ({})", fmt::join(axes, ", ")),
                          [=](const std::vector<Var>& v, Device) { return permute(v[0], axes); }, {x});
    check_parity_both("permute 4-D", [](const std::vector<Var>& v, Device) { return permute(v[0], {3, 1, 0, 2}); },
                      {parity_values({2, 3, 2, 5}, 17)});
    check_parity_both("transpose", [](const std::vector<Var>& v, Device) { return transpose(v[0], 0, 2); }, {x});
    for (int64_t axis : {0, 1, 2})
        check_parity_both(fmt::format("slice axis {}", axis),
                          [=](const std::vector<Var>& v, Device) { return slice(v[0], axis, 1, 2); }, {x});
    const Tensor y = parity_values({2, 3, 4}, 18), z = parity_values({2, 1, 4}, 19);
    check_parity_both("concat axis 1", [](const std::vector<Var>& v, Device) { return concat({v[0], v[1], v[0]}, 1); },
                      {x, z});
    check_parity_both("concat axis 0", [](const std::vector<Var>& v, Device) { return concat({v[0], v[1]}, 0); },
                      {x, y});
    for (int64_t axis : {0, 1, 3})
        check_parity_both(fmt::format("stack axis {}", axis),
                          [=](const std::vector<Var>& v, Device) { return stack({v[0], v[1]}, axis); }, {x, y});
    // int64 values move too (permute and copies move words, not numbers).
    const Tensor indices = Tensor::from_indices({0, 1, 2, 3, 4, 5}, {2, 3});
    check_tensor_parity("int64 transpose", [](const std::vector<Tensor>& t) { return transpose(t[0], 0, 1); },
                        {indices});
    check_tensor_parity("int64 concat", [](const std::vector<Tensor>& t) { return concat({t[0], t[0]}, 1); },
                        {indices});
}

TEST_CASE("cuda parity: matmul in every form, forward and backward") {
    struct Form {
        Shape a, b;
        Transpose transpose;
    };
    const std::vector<Form> forms = {
        {{3, 5}, {5, 4}, Transpose::None},        {{5, 3}, {5, 4}, Transpose::First},
        {{3, 5}, {4, 5}, Transpose::Second},      {{5, 3}, {4, 5}, Transpose::Both},
        {{2, 3, 5}, {2, 5, 4}, Transpose::None},  {{2, 5, 3}, {2, 4, 5}, Transpose::Both},
        {{2, 3, 5}, {5, 4}, Transpose::None},     {{2, 3, 5}, {4, 5}, Transpose::Second},
        {{2, 5, 3}, {5, 4}, Transpose::First},    {{3, 5}, {2, 5, 4}, Transpose::None},
        {{5, 3}, {2, 4, 5}, Transpose::Both},     {{1, 1}, {1, 7}, Transpose::None},
    };
    for (const Form& form : forms)
        check_parity_both(fmt::format("matmul {} {} ({})", shape_string(form.a), shape_string(form.b),
                                      static_cast<int>(form.transpose)),
                          [t = form.transpose](const std::vector<Var>& v, Device) { return matmul(v[0], v[1], t); },
                          {parity_values(form.a, 20), parity_values(form.b, 21)});
}

TEST_CASE("cuda parity: to(Var, Device) moves values there and gradients back") {
    const Tensor x = parity_values({3, 4}, 22);
    Var leaf = Var::parameter(x.clone());
    Var on_device = to(leaf, Device::CUDA);
    CHECK(on_device.value().device() == Device::CUDA);
    CHECK(to(on_device, Device::CUDA).node() == on_device.node());  // already there: the same Var
    Var loss = sum(to(on_device * on_device, Device::CPU));
    loss.backward();
    REQUIRE(leaf.grad().device() == Device::CPU);
    CHECK(allclose(leaf.grad(), x * 2.0, 1e-15, 0));
}
