// Elementwise, unary and reduction ops (engine/ops/elementwise.cpp, unary.cpp, reduce.cpp):
// forward values against naive loops written here, in both dtypes; the gradient at ties
// and at saturation; and the errors for inputs that do not fit. The gradients themselves
// are checked against finite differences by the registered cases (test_ops_gradcheck.cpp).
#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include "engine/threads.h"
#include "tests/test_helpers.h"

using namespace nce;
using nce::testing::kFloatDtypes;
using nce::testing::tolerance_for;

namespace {

// Checks every element of `actual` against `expected` (computed in double) within the
// dtype's tolerance, relative to max(1, |expected|).
void check_values(const Tensor& actual, const Shape& shape, const std::vector<double>& expected, Dtype dtype,
                  const std::string& what) {
    REQUIRE_MESSAGE(actual.shape() == shape, what << ": shape " << shape_string(actual.shape()) << ", expected "
                                                  << shape_string(shape));
    CHECK_MESSAGE(actual.dtype() == dtype, what << ": dtype " << dtype_name(actual.dtype()));
    std::vector<double> values = actual.to_vector();
    REQUIRE(values.size() == expected.size());
    double worst = 0;
    size_t worst_index = 0;
    for (size_t i = 0; i < values.size(); ++i) {
        double error = std::abs(values[i] - expected[i]) / std::max(1.0, std::abs(expected[i]));
        if (!(error <= worst)) {  // also catches nan
            worst = error;
            worst_index = i;
        }
    }
    CHECK_MESSAGE(worst <= tolerance_for(dtype), what << ": element " << worst_index << " is "
                                                       << values[worst_index] << ", expected "
                                                       << expected[worst_index]);
}

// The row-major multi-index of `flat` in `shape`.
std::vector<int64_t> unravel(int64_t flat, const Shape& shape) {
    std::vector<int64_t> index(shape.size());
    for (size_t axis = shape.size(); axis-- > 0;) {
        index[axis] = flat % shape[axis];
        flat /= shape[axis];
    }
    return index;
}

// The flat index, in an operand of `shape`, of the element that broadcasting places at
// `index` of the result: shapes align on the right, and a size-1 axis always reads index 0.
int64_t broadcast_source(const Shape& shape, const std::vector<int64_t>& index) {
    size_t lead = index.size() - shape.size();
    int64_t flat = 0;
    for (size_t axis = 0; axis < shape.size(); ++axis)
        flat = flat * shape[axis] + (shape[axis] == 1 ? 0 : index[lead + axis]);
    return flat;
}

// out[i] = f(a[.], b[.]) over the broadcast result, by plain loops.
std::vector<double> naive_broadcast(const Tensor& a, const Tensor& b, const Shape& out_shape,
                                    const std::function<double(double, double)>& f) {
    std::vector<double> av = a.to_vector(), bv = b.to_vector();
    std::vector<double> out(static_cast<size_t>(shape_numel(out_shape)));
    for (int64_t i = 0; i < shape_numel(out_shape); ++i) {
        std::vector<int64_t> index = unravel(i, out_shape);
        out[i] = f(av[broadcast_source(a.shape(), index)], bv[broadcast_source(b.shape(), index)]);
    }
    return out;
}

std::vector<double> naive_map(const Tensor& x, const std::function<double(double)>& f) {
    std::vector<double> out = x.to_vector();
    for (double& v : out) v = f(v);
    return out;
}

// x viewed as [outer, n, inner] around `axis`: values[o, i] = the sum (or the max) over k
// of x[o, k, i]; for max, argmax[o, i] = the first k holding it (a later k must be
// strictly larger to take over).
struct NaiveReduction {
    std::vector<double> values;
    std::vector<int64_t> argmax;
};
NaiveReduction naive_reduce(const Tensor& x, int64_t axis, bool take_max) {
    const Shape& shape = x.shape();
    int64_t outer = 1, inner = 1, n = shape[axis];
    for (int64_t i = 0; i < axis; ++i) outer *= shape[i];
    for (size_t i = axis + 1; i < shape.size(); ++i) inner *= shape[i];
    std::vector<double> xv = x.to_vector();
    NaiveReduction result;
    for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) {
            double acc = xv[o * n * inner + i];
            int64_t best = 0;
            for (int64_t k = 1; k < n; ++k) {
                double v = xv[(o * n + k) * inner + i];
                if (!take_max) {
                    acc += v;
                } else if (v > acc) {
                    acc = v;
                    best = k;
                }
            }
            result.values.push_back(acc);
            result.argmax.push_back(best);
        }
    return result;
}

Shape without_axis(Shape shape, int64_t axis, bool keepdim) {
    if (keepdim)
        shape[axis] = 1;
    else
        shape.erase(shape.begin() + axis);
    return shape;
}

double gelu_erf_formula(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }
double gelu_tanh_formula(double x) {
    const double pi = 3.14159265358979323846;
    return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / pi) * (x + 0.044715 * x * x * x)));
}

struct BroadcastCase {
    Shape a, b, out;
};
const BroadcastCase kBroadcastCases[] = {
    {{3, 4}, {3, 4}, {3, 4}},  {{3, 4}, {4}, {3, 4}},       {{3, 1}, {1, 4}, {3, 4}},
    {{2, 3, 4}, {3, 1}, {2, 3, 4}}, {{}, {2, 3}, {2, 3}}, {{2, 3}, {}, {2, 3}},
    {{4}, {2, 1, 1}, {2, 1, 4}}, {{}, {}, {}},
};

}  // namespace

TEST_CASE("add, sub, mul, div: broadcast like NumPy, values equal naive loops") {
    Generator generator(11);
    for (Dtype dtype : kFloatDtypes) {
        for (const BroadcastCase& c : kBroadcastCases) {
            Tensor a = generator.normal(c.a, dtype);
            Tensor b = generator.uniform(c.b, dtype, 0.5, 2.0);  // a divisor away from 0
            Var x(a), y(b);
            std::string shapes = shape_string(c.a) + " and " + shape_string(c.b) + " " + dtype_name(dtype);
            check_values(add(x, y).value(), c.out, naive_broadcast(a, b, c.out, std::plus<>()), dtype, "add " + shapes);
            check_values(sub(x, y).value(), c.out, naive_broadcast(a, b, c.out, std::minus<>()), dtype,
                         "sub " + shapes);
            check_values(mul(x, y).value(), c.out, naive_broadcast(a, b, c.out, std::multiplies<>()), dtype,
                         "mul " + shapes);
            check_values(div(x, y).value(), c.out, naive_broadcast(a, b, c.out, std::divides<>()), dtype,
                         "div " + shapes);
        }
    }
}

TEST_CASE("keep_where keeps x where the mask is nonzero and fills the rest (PyTorch's masked_fill fills the 1s)") {
    for (Dtype dtype : kFloatDtypes) {
        Tensor x = Tensor::from_vector({1.0, 2.0, 3.0}, {3}, dtype);
        Tensor keep = Tensor::from_vector({1.0, 0.0, 1.0}, {3}, dtype);
        CHECK(keep_where(x, keep, 9.0).to_vector() == std::vector<double>{1.0, 9.0, 3.0});
    }
}

TEST_CASE("keep_where: same-shape and broadcast masks select like naive loops, inf and nan included") {
    struct MaskCase {
        Shape x, mask;
    };
    // Same shape (the one-pass path), and masks broadcast along the last axis, along leading
    // axes, and both (the row-by-row path).
    const MaskCase cases[] = {{{3, 5}, {3, 5}},       {{2, 3, 5}, {2, 3, 1}}, {{4, 6}, {6}},
                              {{2, 3, 4, 4}, {2, 1, 1, 4}}, {{5}, {}},        {{2, 3}, {1, 1}}};
    Generator generator(23);
    for (Dtype dtype : kFloatDtypes) {
        for (const MaskCase& c : cases) {
            Tensor x = generator.normal(c.x, dtype);
            std::vector<double> x_values = x.to_vector();
            x_values[0] = std::numeric_limits<double>::infinity();  // a select, not a product: no inf·0
            x_values[x_values.size() - 1] = std::nan("");
            x = Tensor::from_vector(x_values, c.x, dtype);
            Tensor mask = generator.bernoulli(c.mask, dtype, 0.5);
            std::vector<double> expected =
                naive_broadcast(x, mask, c.x, [](double value, double keep) { return keep != 0 ? value : -7.0; });
            std::vector<double> actual = keep_where(x, mask, -7.0).to_vector();
            REQUIRE(actual.size() == expected.size());
            for (size_t i = 0; i < actual.size(); ++i) {
                bool same = actual[i] == expected[i] || (std::isnan(actual[i]) && std::isnan(expected[i]));
                CHECK_MESSAGE(same, "keep_where " << shape_string(c.x) << " by " << shape_string(c.mask) << " "
                                                   << dtype_name(dtype) << ": element " << i << " is " << actual[i]
                                                   << ", expected " << expected[i]);
            }
        }
    }
}

TEST_CASE("neg, add_scalar, mul_scalar and every Var operator compute what they spell") {
    Generator generator(12);
    for (Dtype dtype : kFloatDtypes) {
        Tensor a = generator.normal({2, 3}, dtype), b = generator.uniform({3}, dtype, 0.5, 2.0);
        Var x(a), y(b);
        Shape s{2, 3};
        auto both = [&](const std::function<double(double, double)>& f) { return naive_broadcast(a, b, s, f); };
        auto one = [&](const std::function<double(double)>& f) { return naive_map(a, f); };
        check_values(neg(x).value(), s, one([](double v) { return -v; }), dtype, "neg");
        check_values(add_scalar(x, 1.5).value(), s, one([](double v) { return v + 1.5; }), dtype, "add_scalar");
        check_values(mul_scalar(x, -2.5).value(), s, one([](double v) { return v * -2.5; }), dtype, "mul_scalar");
        check_values((x + y).value(), s, both([](double p, double q) { return p + q; }), dtype, "x + y");
        check_values((x - y).value(), s, both([](double p, double q) { return p - q; }), dtype, "x - y");
        check_values((x * y).value(), s, both([](double p, double q) { return p * q; }), dtype, "x * y");
        check_values((x / y).value(), s, both([](double p, double q) { return p / q; }), dtype, "x / y");
        check_values((-x).value(), s, one([](double v) { return -v; }), dtype, "-x");
        check_values((x + 2.0).value(), s, one([](double v) { return v + 2.0; }), dtype, "x + 2");
        check_values((x - 2.0).value(), s, one([](double v) { return v - 2.0; }), dtype, "x - 2");
        check_values((x * 3.0).value(), s, one([](double v) { return v * 3.0; }), dtype, "x * 3");
        check_values((x / 4.0).value(), s, one([](double v) { return v / 4.0; }), dtype, "x / 4");
        check_values((2.0 + x).value(), s, one([](double v) { return 2.0 + v; }), dtype, "2 + x");
        check_values((2.0 - x).value(), s, one([](double v) { return 2.0 - v; }), dtype, "2 - x");
        check_values((3.0 * x).value(), s, one([](double v) { return 3.0 * v; }), dtype, "3 * x");
    }
}

TEST_CASE("a broadcast operand's gradient is summed over the axes it was copied along") {
    // y = a + b with a [3, 1] and b [1, 4]: each a_i feeds 4 outputs, each b_j feeds 3.
    for (Dtype dtype : kFloatDtypes) {
        Var a = Var::parameter(Tensor::zeros({3, 1}, dtype)), b = Var::parameter(Tensor::zeros({1, 4}, dtype));
        sum(a + b).backward();
        check_values(a.grad(), {3, 1}, {4, 4, 4}, dtype, "d sum(a + b) / da");
        check_values(b.grad(), {1, 4}, {3, 3, 3, 3}, dtype, "d sum(a + b) / db");
    }
}

TEST_CASE("exp, log, sqrt, tanh, sigmoid, relu, pow, gelu: values equal their formulas") {
    Generator generator(13);
    for (Dtype dtype : kFloatDtypes) {
        Shape s{2, 3, 4};
        Tensor any = generator.normal(s, dtype, 0.0, 2.0);
        Tensor positive = generator.uniform(s, dtype, 0.1, 3.0);
        Var x(any), p(positive);
        std::string d = std::string(" ") + dtype_name(dtype);
        check_values(exp(x).value(), s, naive_map(any, [](double v) { return std::exp(v); }), dtype, "exp" + d);
        check_values(log(p).value(), s, naive_map(positive, [](double v) { return std::log(v); }), dtype, "log" + d);
        check_values(sqrt(p).value(), s, naive_map(positive, [](double v) { return std::sqrt(v); }), dtype, "sqrt" + d);
        check_values(tanh(x).value(), s, naive_map(any, [](double v) { return std::tanh(v); }), dtype, "tanh" + d);
        check_values(sigmoid(x).value(), s, naive_map(any, [](double v) { return 1.0 / (1.0 + std::exp(-v)); }), dtype,
                     "sigmoid" + d);
        check_values(relu(x).value(), s, naive_map(any, [](double v) { return v > 0 ? v : 0.0; }), dtype, "relu" + d);
        for (double exponent : {2.0, 3.0, 0.5, -1.5, 0.0})
            check_values(pow(p, exponent).value(), s,
                         naive_map(positive, [exponent](double v) { return std::pow(v, exponent); }), dtype,
                         "pow(x, " + std::to_string(exponent) + ")" + d);
        check_values(gelu(x, GeluApproximation::Erf).value(), s, naive_map(any, gelu_erf_formula), dtype,
                     "gelu erf" + d);
        check_values(gelu(x).value(), s, naive_map(any, gelu_erf_formula), dtype, "gelu default (erf)" + d);
        check_values(gelu(x, GeluApproximation::Tanh).value(), s, naive_map(any, gelu_tanh_formula), dtype,
                     "gelu tanh" + d);

        // pow with a Var exponent broadcasts like the binary ops.
        for (const BroadcastCase& c : kBroadcastCases) {
            Tensor base = generator.uniform(c.a, dtype, 0.5, 2.0), exponent = generator.normal(c.b, dtype);
            check_values(pow(Var(base), Var(exponent)).value(), c.out,
                         naive_broadcast(base, exponent, c.out, [](double b, double e) { return std::pow(b, e); }),
                         dtype, "pow " + shape_string(c.a) + " ^ " + shape_string(c.b) + d);
        }
    }
}

TEST_CASE("sigmoid saturates cleanly at x = ±1000: 0 and 1, zero gradient, nothing inf or nan") {
    for (Dtype dtype : kFloatDtypes) {
        Var x = Var::parameter(Tensor::from_vector({-1000.0, 1000.0, 0.0}, {3}, dtype));
        Var y = sigmoid(x);
        check_values(y.value(), {3}, {0.0, 1.0, 0.5}, dtype, "sigmoid(-1000, 1000, 0)");
        CHECK(y.value().at(0) >= 0.0);
        sum(y).backward();
        CHECK(all_finite(x.grad()));
        check_values(x.grad(), {3}, {0.0, 0.0, 0.25}, dtype, "sigmoid'(-1000, 1000, 0)");
    }
}

TEST_CASE("pow(x, 0) has gradient exactly 0, also at x = 0") {
    for (Dtype dtype : kFloatDtypes) {
        Var x = Var::parameter(Tensor::from_vector({0.0, 2.0}, {2}, dtype));
        sum(pow(x, 0.0)).backward();
        check_values(x.grad(), {2}, {0.0, 0.0}, dtype, "d x^0 / dx");
    }
}

TEST_CASE("sum, mean, max along every axis, with and without keepdim, equal naive loops") {
    Generator generator(14);
    for (Dtype dtype : kFloatDtypes) {
        for (const Shape& shape : {Shape{5}, Shape{3, 4}, Shape{2, 3, 4}}) {
            Tensor value = generator.normal(shape, dtype);
            Var x(value);
            for (int64_t axis = 0; axis < static_cast<int64_t>(shape.size()); ++axis) {
                NaiveReduction sums = naive_reduce(value, axis, false), maxima = naive_reduce(value, axis, true);
                std::vector<double> means = sums.values;
                for (double& m : means) m /= static_cast<double>(shape[axis]);
                for (bool keepdim : {false, true}) {
                    Shape out = without_axis(shape, axis, keepdim);
                    std::string what = shape_string(shape) + " axis " + std::to_string(axis) +
                                       (keepdim ? " keepdim " : " ") + dtype_name(dtype);
                    check_values(sum(x, axis, keepdim).value(), out, sums.values, dtype, "sum " + what);
                    check_values(mean(x, axis, keepdim).value(), out, means, dtype, "mean " + what);
                    check_values(max(x, axis, keepdim).value(), out, maxima.values, dtype, "max " + what);
                    // A negative axis counts from the end.
                    int64_t negative = axis - static_cast<int64_t>(shape.size());
                    check_values(sum(x, negative, keepdim).value(), out, sums.values, dtype, "sum negative " + what);
                }
                // The max's gradient is 1 at each slice's argmax and 0 elsewhere.
                Var parameter = Var::parameter(value);
                sum(max(parameter, axis)).backward();
                int64_t n = shape[axis], inner = 1;  // x as [outer, n, inner]
                for (size_t later = axis + 1; later < shape.size(); ++later) inner *= shape[later];
                std::vector<double> expected(static_cast<size_t>(shape_numel(shape)), 0.0);
                for (size_t slice = 0; slice < maxima.argmax.size(); ++slice) {
                    int64_t o = static_cast<int64_t>(slice) / inner, i = static_cast<int64_t>(slice) % inner;
                    expected[(o * n + maxima.argmax[slice]) * inner + i] = 1.0;
                }
                check_values(parameter.grad(), shape, expected, dtype,
                             "d max / dx " + shape_string(shape) + " axis " + std::to_string(axis));
            }
            // Over all elements -> shape [].
            std::vector<double> all = value.to_vector();
            double total = 0, largest = all[0];
            for (double v : all) {
                total += v;
                largest = std::max(largest, v);
            }
            std::string what = shape_string(shape) + " all elements " + dtype_name(dtype);
            check_values(sum(x).value(), {}, {total}, dtype, "sum " + what);
            check_values(mean(x).value(), {}, {total / static_cast<double>(all.size())}, dtype, "mean " + what);
            check_values(max(x).value(), {}, {largest}, dtype, "max " + what);
        }
    }
}

TEST_CASE("sum and mean send the output gradient to every element of its slice") {
    for (Dtype dtype : kFloatDtypes) {
        // x [2, 3]; weights w make each output's gradient distinct: L = sum(w ⊙ reduce(x)).
        Var x = Var::parameter(Tensor::zeros({2, 3}, dtype));
        Var w(Tensor::from_vector({1, 2, 3}, {3}, dtype));
        sum(w * sum(x, 0)).backward();
        check_values(x.grad(), {2, 3}, {1, 2, 3, 1, 2, 3}, dtype, "d sum_axis0 / dx");
        x.zero_grad();
        sum(Var(Tensor::from_vector({10, 20}, {2, 1}, dtype)) * mean(x, 1, true)).backward();
        check_values(x.grad(), {2, 3}, {10. / 3, 10. / 3, 10. / 3, 20. / 3, 20. / 3, 20. / 3}, dtype,
                     "d mean_axis1_keepdim / dx");
        x.zero_grad();
        mean(x).backward();
        check_values(x.grad(), {2, 3}, std::vector<double>(6, 1.0 / 6), dtype, "d mean / dx");
    }
}

TEST_CASE("max: ties pick the first maximum, for the value's index and for the gradient") {
    for (Dtype dtype : kFloatDtypes) {
        // Rows [1, 3, 3] and [2, 2, 0]: the first maxima are at columns 1 and 0.
        Tensor value = Tensor::from_vector({1, 3, 3, 2, 2, 0}, {2, 3}, dtype);
        MaxResult along_rows = max(value, 1);
        CHECK(along_rows.indices.to_indices() == std::vector<int64_t>{1, 0});

        Var x = Var::parameter(value);
        Var w(Tensor::from_vector({10, 20}, {2}, dtype));
        sum(w * max(x, 1)).backward();
        check_values(x.grad(), {2, 3}, {0, 10, 0, 20, 0, 0}, dtype, "d max_axis1 / dx");

        // Down the columns [1, 2], [3, 2], [3, 0]: the maxima are in rows 1, 0, 0.
        x.zero_grad();
        sum(Var(Tensor::from_vector({1, 2, 3}, {1, 3}, dtype)) * max(x, 0, true)).backward();
        check_values(x.grad(), {2, 3}, {0, 2, 3, 1, 0, 0}, dtype, "d max_axis0_keepdim / dx");

        // Over all elements the first 3 (flat index 1) takes the gradient.
        x.zero_grad();
        max(x).backward();
        check_values(x.grad(), {2, 3}, {0, 1, 0, 0, 0, 0}, dtype, "d max_all / dx");

        // A middle axis of a 3-D tensor: x [2, 2, 2], max along axis 1.
        Var cube = Var::parameter(Tensor::from_vector({5, 5, 1, 7, 4, 0, 4, 9}, {2, 2, 2}, dtype));
        sum(Var(Tensor::from_vector({1, 2, 3, 4}, {2, 2}, dtype)) * max(cube, 1)).backward();
        // Slices (5,1)->k=0, (5,7)->k=1, (4,4)->k=0 (tie), (0,9)->k=1.
        check_values(cube.grad(), {2, 2, 2}, {1, 0, 0, 2, 3, 0, 0, 4}, dtype, "d max_axis1 / d cube");
    }
}

TEST_CASE("elementwise, unary and reduction ops: bad input gives one clear error") {
    Var a(Tensor::zeros({3, 4}, Dtype::Float64)), b(Tensor::zeros({3}, Dtype::Float64));
    CHECK_ERROR_MENTIONS(add(a, b), "add: shapes [3, 4] and [3] do not broadcast");
    CHECK_ERROR_MENTIONS(sub(a, b), "sub: shapes [3, 4] and [3] do not broadcast");
    CHECK_ERROR_MENTIONS(mul(a, b), "mul: shapes [3, 4] and [3] do not broadcast");
    CHECK_ERROR_MENTIONS(a / b, "div: shapes [3, 4] and [3] do not broadcast");
    CHECK_ERROR_MENTIONS(pow(a, b), "pow: shapes [3, 4] and [3] do not broadcast");
    CHECK_ERROR_MENTIONS(add(a, Var(Tensor::zeros({3, 4}, Dtype::Float32))), "add: dtypes differ (float64 vs float32)");
    CHECK_ERROR_MENTIONS(mul(a, Var(Tensor::from_indices({1, 2, 3, 4}, {4}))), "mul: right operand must be float32");
    CHECK_ERROR_MENTIONS(exp(Var(Tensor::from_indices({1, 2}, {2}))), "exp: input must be float32 or float64");
    CHECK_ERROR_MENTIONS(a / 0.0, "divided by the scalar 0");

    CHECK_ERROR_MENTIONS(sum(a, 2), "sum: axis 2 is out of range for a tensor of rank 2");
    CHECK_ERROR_MENTIONS(sum(a, -3), "sum: axis -3 is out of range");
    CHECK_ERROR_MENTIONS(mean(a, 2, true), "mean: axis 2 is out of range for a tensor of rank 2");
    CHECK_ERROR_MENTIONS(max(a, 5), "max: axis 5 is out of range for a tensor of rank 2");
    CHECK_ERROR_MENTIONS(max(Var(Tensor::zeros({}, Dtype::Float64)), 0), "max: axis 0 is out of range");
    CHECK_ERROR_MENTIONS(max(Var(Tensor::zeros({2, 0}, Dtype::Float64)), 1),
                         "max: axis 1 of the input [2, 0] is empty");
    CHECK_ERROR_MENTIONS(max(Var(Tensor::zeros({0}, Dtype::Float64))), "max: the input [0] is empty");
    CHECK_ERROR_MENTIONS(mean(Var(Tensor::zeros({0, 3}, Dtype::Float64))), "mean: the input [0, 3] is empty");

    // The exponent's gradient is y·log(base): a base <= 0 is refused when it is needed...
    Var base(Tensor::from_vector({2.0, -1.0}, {2}, Dtype::Float64));
    Var exponent = Var::parameter(Tensor::from_vector({2.0, 2.0}, {2}, Dtype::Float64));
    CHECK_ERROR_MENTIONS(pow(base, exponent), "pow: the exponent needs a gradient");
    // ...and allowed when the exponent is a constant.
    Var constant_exponent(Tensor::from_vector({2.0, 3.0}, {2}, Dtype::Float64));
    CHECK(pow(base, constant_exponent).value().to_vector() == std::vector<double>{4.0, -1.0});
}

TEST_CASE("affine: equals matmul plus a broadcast bias, values and gradients, also with constant inputs") {
    for (Dtype dtype : kFloatDtypes) {
        for (int64_t rows : {1, 7, 300}) {
            Generator generator(29);
            Tensor x = generator.normal({rows, 6}, dtype), weight = generator.normal({5, 6}, dtype);
            Tensor bias = generator.normal({5}, dtype), upstream = generator.normal({rows, 5}, dtype);
            const double tolerance = dtype == Dtype::Float64 ? 1e-12 : 1e-5;
            for (bool x_is_parameter : {true, false}) {
                Var x1 = x_is_parameter ? Var::parameter(x) : Var(x), x2 = x_is_parameter ? Var::parameter(x) : Var(x);
                Var w1 = Var::parameter(weight), w2 = Var::parameter(weight);
                Var b1 = Var::parameter(bias), b2 = Var::parameter(bias);
                Var fused = affine(x1, w1, b1);
                Var composed = add(matmul(x2, w2, Transpose::Second), b2);
                fused.backward(upstream);
                composed.backward(upstream);
                std::string what = std::to_string(rows) + " rows " + dtype_name(dtype);
                CHECK_MESSAGE(allclose(fused.value(), composed.value(), tolerance, tolerance), "y " << what);
                CHECK_MESSAGE(allclose(w1.grad(), w2.grad(), tolerance, tolerance), "dW " << what);
                CHECK_MESSAGE(allclose(b1.grad(), b2.grad(), tolerance, tolerance), "db " << what);
                if (x_is_parameter)
                    CHECK_MESSAGE(allclose(x1.grad(), x2.grad(), tolerance, tolerance), "dx " << what);
            }
        }
    }
    Var x(Tensor::zeros({2, 3}, Dtype::Float64));
    Var weight = Var::parameter(Tensor::zeros({4, 3}, Dtype::Float64));
    CHECK_ERROR_MENTIONS(affine(x, weight, Var(Tensor::zeros({3}, Dtype::Float64))),
                         "affine: x must be [N, in], weight [out, in] and bias [out], got x [2, 3], weight [4, 3] and "
                         "bias [3]");
    CHECK_ERROR_MENTIONS(affine(x, weight, Var(Tensor::zeros({4}, Dtype::Float32))),
                         "x, weight and bias must share a dtype, got float64, float64 and float32");
}


// A masked entry is -inf and must get probability exactly 0: exp(-inf) = 0, not the tiny
// denormal (about 4e-39 / 5e-309) that a clamped vectorised exp returns. Results below the
// smallest normal number are 0 too; everywhere else exp agrees with std::exp.
TEST_CASE("exp, softmax and log_softmax give exactly 0 for -inf, and no denormal below the smallest normal") {
    const double minus_infinity = -std::numeric_limits<double>::infinity();
    for (Dtype dtype : kFloatDtypes) {
        INFO(dtype_name(dtype));
        // Long enough for the vectorised body, not just a scalar tail.
        std::vector<double> inputs(37, minus_infinity);
        inputs[1] = -1000.0;
        inputs[2] = -0.5;
        inputs[3] = 0.0;
        inputs[4] = 2.0;
        std::vector<double> y = exp(Tensor::from_vector(inputs, {37}, dtype)).to_vector();
        CHECK(y[0] == 0.0);
        CHECK(y[1] == 0.0);
        CHECK(y[36] == 0.0);
        double tolerance = dtype == Dtype::Float32 ? 1e-6 : 1e-15;
        CHECK(std::abs(y[2] - std::exp(-0.5)) <= tolerance * std::exp(-0.5));
        CHECK(y[3] == 1.0);
        CHECK(std::abs(y[4] - std::exp(2.0)) <= tolerance * std::exp(2.0));
        double smallest_normal = dtype == Dtype::Float32 ? double(std::numeric_limits<float>::min())
                                                         : std::numeric_limits<double>::min();
        for (double value : y) CHECK((value == 0.0 || value >= smallest_normal));

        // A row with masked entries: softmax 0 there, log_softmax -inf, and the gradients
        // through them exactly 0.
        Tensor row = Tensor::from_vector(inputs, {1, 37}, dtype);
        std::vector<double> probabilities = softmax(row).to_vector();
        for (size_t j = 0; j < inputs.size(); ++j)
            if (j < 1 || j > 4) CHECK(probabilities[j] == 0.0);
        Tensor ones = full_like(row, 1.0);
        std::vector<double> through_log = log_softmax_backward(log_softmax(row), ones).to_vector();
        std::vector<double> through_softmax = softmax_backward(softmax(row), ones).to_vector();
        for (size_t j = 5; j < inputs.size(); ++j) {
            CHECK(through_log[j] == 1.0);  // dy_j - softmax_j · sum(dy), softmax_j = exactly 0
            CHECK(through_softmax[j] == 0.0);
        }
    }
}

// mul and div keep, for the backward, only the operands a gradient is formed from: a constant
// factor's partner is not held (what the closure captures shows in the storage's use count).
TEST_CASE("mul and div keep no operand that no gradient needs") {
    Tensor parameter_value = Tensor::from_vector({1, 2, 3}, {3}, Dtype::Float64);
    Tensor constant_value = Tensor::from_vector({4, 5, 6}, {3}, Dtype::Float64);
    Var parameter = Var::parameter(parameter_value);
    Var constant(constant_value);
    long parameter_holders = parameter_value.use_count(), constant_holders = constant_value.use_count();

    Var product = mul(parameter, constant);         // dL/dparameter = dy ⊙ constant: keeps the constant only
    CHECK(parameter_value.use_count() == parameter_holders);
    CHECK(constant_value.use_count() == constant_holders + 1);
    Var swapped = mul(constant, parameter);
    CHECK(parameter_value.use_count() == parameter_holders);
    Var quotient = div(parameter, constant);        // dL/dparameter = dy / constant: keeps the constant only
    CHECK(parameter_value.use_count() == parameter_holders);
    Var inverse = div(constant, parameter);         // dL/dparameter = -dy ⊙ constant / parameter^2: keeps both
    CHECK(parameter_value.use_count() == parameter_holders + 1);

    // The gradients are unchanged: 4 + 4 + 1/4 - 4/1 at element 0.
    sum(product + swapped + quotient + inverse).backward();
    std::vector<double> expected;
    for (int k = 0; k < 3; ++k) {
        double a = 1.0 + k, c = 4.0 + k;
        expected.push_back(c + c + 1.0 / c - c / (a * a));
    }
    std::vector<double> actual = parameter.grad().to_vector();
    for (int k = 0; k < 3; ++k) CHECK(actual[k] == doctest::Approx(expected[k]).epsilon(1e-15));
}

// Same inputs and threads, same bits: on several threads a flat array is cut into the same
// chunks on every call (engine/threads.h). Under oneTBB's adaptive split the chunks moved from
// call to call, and with them which elements gelu's backward computed in a vectorised loop's
// scalar tail: 9 calls in 10 gave other bits, and a MiniLM fine-tuning step on 2 threads
// another gradient norm each run.
TEST_CASE("gelu's backward gives the same bits on every call on several threads") {
    const int threads = num_threads();
    set_num_threads(2);
    Generator generator(5);
    Tensor x = generator.normal({1437, 1536}, Dtype::Float32);  // rows no chunk size divides
    Tensor upstream = generator.normal({1437, 1536}, Dtype::Float32);
    auto gelu_grad = [&] {
        Var v(x, true);
        sum(gelu(v) * Var(upstream)).backward();
        return v.grad();
    };
    const Tensor first = gelu_grad();
    for (int call = 0; call < 20; ++call) {
        CAPTURE(call);
        REQUIRE(max_abs_difference(gelu_grad(), first) == 0);
    }
    set_num_threads(threads);
}
