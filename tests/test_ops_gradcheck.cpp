// Every registered op's hand-derived backward against central finite differences, in both
// dtypes, plus proof that the checker itself catches a wrong backward.
#include "tests/test_helpers.h"

using namespace nce;

TEST_CASE("gradcheck: every engine op passes in float64 and float32") {
    CheckRegistry registry;
    register_engine_checks(registry);
    REQUIRE(registry.cases().size() > 0);
    for (Dtype dtype : nce::testing::kFloatDtypes) {
        for (const CheckCase& check : registry.cases()) {
            GradcheckResult result = run_check(check, dtype, 1);
            CAPTURE(check.op);
            CAPTURE(check.description);
            std::string dtype_text = dtype_name(dtype);
            CAPTURE(dtype_text);
            CAPTURE(result.max_rel_error);
            CHECK(result.passed);
        }
    }
}

TEST_CASE("gradcheck: every op named in the engine's op list has at least two cases") {
    CheckRegistry registry;
    register_engine_checks(registry);
    for (const std::string& op : registry.ops()) {
        int count = 0;
        for (const CheckCase& check : registry.cases()) count += check.op == op;
        CAPTURE(op);
        CHECK(count >= 2);
    }
}

namespace {

// y = x ⊙ x with a backward that is wrong by a factor of (1 + error).
Var square_with_error(const Var& x, double error) {
    return Var::from_op("square", square(x.value()), {x},
                        [xv = x.value(), error](const Tensor& dy) -> Grads { return {dy * xv * (2.0 * (1 + error))}; });
}

}  // namespace

TEST_CASE("gradcheck: a backward that is slightly wrong fails, a right one passes") {
    Generator generator(11);
    Tensor x = generator.normal({3, 4}, Dtype::Float64);
    for (Dtype dtype : nce::testing::kFloatDtypes) {
        GradcheckOptions options;
        options.dtype = dtype;
        CHECK(gradcheck([](const std::vector<Var>& v) { return square_with_error(v[0], 0.0); }, {x}, options).passed);
        // float32 is held against float64 differences, so it catches a wrong factor of 1e-3.
        double error = dtype == Dtype::Float64 ? 1e-4 : 1e-3;
        CHECK_FALSE(gradcheck([error](const std::vector<Var>& v) { return square_with_error(v[0], error); }, {x}, options).passed);
    }
    // The random-direction mode (inputs too large for a full Jacobian) catches it too.
    Tensor big = generator.normal({40, 40}, Dtype::Float64);
    GradcheckResult right = gradcheck([](const std::vector<Var>& v) { return square_with_error(v[0], 0.0); }, {big});
    GradcheckResult wrong = gradcheck([](const std::vector<Var>& v) { return square_with_error(v[0], 1e-4); }, {big});
    CHECK_FALSE(right.inputs[0].full_jacobian);
    CHECK(right.passed);
    CHECK_FALSE(wrong.passed);
    GradcheckOptions single;
    single.dtype = Dtype::Float32;
    CHECK(gradcheck([](const std::vector<Var>& v) { return square_with_error(v[0], 0.0); }, {big}, single).passed);
    CHECK_FALSE(gradcheck([](const std::vector<Var>& v) { return square_with_error(v[0], 1e-3); }, {big}, single).passed);
}

TEST_CASE("gradcheck: a gradient below the differences' rounding is checked to that rounding") {
    // y = w ⊙ w + 1e-9 · x with w near 1e3: y is about 1e6, so a central difference along x
    // carries rounding of ~1e-3, far above x's gradient of 1e-9. The check measures x's
    // error against that noise (and passes) instead of against 1e-9; an x gradient wrong by
    // 1 is still far above the noise and fails.
    Tensor w = Tensor::from_vector({1e3, -2e3, 1.5e3}, {3}, Dtype::Float64);
    Tensor x = Tensor::from_vector({0.5, -0.25, 2.0}, {3}, Dtype::Float64);
    auto with_error = [](double error) {
        return [error](const std::vector<Var>& v) {
            Tensor wv = v[0].value(), xv = v[1].value();
            return Var::from_op("tiny", wv * wv + xv * 1e-9, {v[0], v[1]}, [wv, error](const Tensor& dy) -> Grads {
                return {dy * wv * 2.0, dy * (1e-9 + error)};
            });
        };
    };
    GradcheckResult right = gradcheck(with_error(0.0), {w, x});
    CHECK(right.passed);
    // The differences do not see x at all (y moves by 1e-15, below its last place): against
    // x's own scale the error would read 1, a failure the backward is not to blame for.
    CHECK(right.inputs[1].numeric[0] == 0.0);
    CHECK(right.inputs[1].max_abs_error == doctest::Approx(1e-9));
    CHECK_FALSE(gradcheck(with_error(1.0), {w, x}).passed);
}
