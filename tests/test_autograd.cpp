// The autograd machinery itself, with ops defined here through Var::from_op so that these
// tests do not depend on the engine's op library.
#include "tests/test_helpers.h"

using namespace nce;

namespace {

// y = x ⊙ x:  dL/dx = 2 x ⊙ dL/dy
Var square_op(const Var& x) {
    return Var::from_op("square", square(x.value()), {x},
                        [xv = x.value()](const Tensor& dy) -> Grads { return {dy * xv * 2.0}; });
}

// y = a ⊙ b:  dL/da = b ⊙ dL/dy,  dL/db = a ⊙ dL/dy
Var times(const Var& a, const Var& b) {
    return Var::from_op("times", a.value() * b.value(), {a, b},
                        [av = a.value(), bv = b.value()](const Tensor& dy) -> Grads { return {dy * bv, dy * av}; });
}

// y = sum of all elements:  dL/dx = dL/dy everywhere
Var total(const Var& x) {
    return Var::from_op("total", sum(x.value()), {x},
                        [shape = x.shape()](const Tensor& dy) -> Grads { return {Tensor::full(shape, dy.item(), dy.dtype())}; });
}

// y = a + b (same shape):  dL/da = dL/db = dL/dy
Var plus(const Var& a, const Var& b) {
    return Var::from_op("plus", a.value() + b.value(), {a, b}, [](const Tensor& dy) -> Grads { return {dy, dy}; });
}

Tensor vector3(double a, double b, double c) { return Tensor::from_vector({a, b, c}, {3}, Dtype::Float64); }

}  // namespace

TEST_CASE("autograd: gradients of a small graph, summed where a value is used twice") {
    Var x = Var::parameter(vector3(1, 2, 3));
    Var y = Var::parameter(vector3(4, 5, 6));
    // L = sum(x⊙x ⊙ y) + sum(x⊙y): dL/dx = 2 x ⊙ y + y, dL/dy = x⊙x + x
    Var loss = plus(total(times(square_op(x), y)), total(times(x, y)));
    loss.backward();
    CHECK(x.grad().to_vector() == std::vector<double>{2 * 1 * 4 + 4, 2 * 2 * 5 + 5, 2 * 3 * 6 + 6});
    CHECK(y.grad().to_vector() == std::vector<double>{1 + 1, 4 + 2, 9 + 3});
}

TEST_CASE("autograd: a value feeding both inputs of one op gets both contributions") {
    Var x = Var::parameter(vector3(1, 2, 3));
    Var loss = total(times(x, x));  // dL/dx = 2x
    loss.backward();
    CHECK(x.grad().to_vector() == std::vector<double>{2, 4, 6});
}

TEST_CASE("autograd: gradients accumulate until zero_grad") {
    Var x = Var::parameter(vector3(1, 2, 3));
    total(square_op(x)).backward();
    total(square_op(x)).backward();
    CHECK(x.grad().to_vector() == std::vector<double>{4, 8, 12});
    x.zero_grad();
    CHECK_FALSE(x.grad().defined());
    total(square_op(x)).backward();
    CHECK(x.grad().to_vector() == std::vector<double>{2, 4, 6});
}

TEST_CASE("autograd: no-grad scopes and detach record nothing") {
    Var x = Var::parameter(vector3(1, 2, 3));
    {
        NoGradGuard no_grad;
        Var y = square_op(x);
        CHECK_FALSE(y.requires_grad());
    }
    CHECK(square_op(x).requires_grad());
    Var cut = square_op(x).detach();
    CHECK_FALSE(cut.requires_grad());
    Var constant(vector3(1, 1, 1));
    CHECK_FALSE(times(constant, constant).requires_grad());
    // Only the path through x contributes.
    total(times(x, square_op(x).detach())).backward();
    CHECK(x.grad().to_vector() == std::vector<double>{1, 4, 9});
}

// A model thousands of layers deep that stops with an error unwinds its graph without a
// backward: releasing it must not take a stack frame per node (a chain of 300,000 ops here
// overflowed the 8 MB stack when each node's destructor freed the next).
TEST_CASE("autograd: a very deep graph is released without deep recursion") {
    Var x = Var::parameter(Tensor::full({1}, 1.0, Dtype::Float64));
    {
        Var y = x;
        for (int i = 0; i < 300'000; ++i) y = add_scalar(y, 1e-6);
        CHECK(y.requires_grad());
    }  // the chain is released here
    Var z = mul_scalar(x, 2.0);
    sum(z).backward();
    CHECK(x.grad().item() == 2.0);
}

TEST_CASE("autograd: a graph is freed after backward unless retained") {
    Var x = Var::parameter(vector3(1, 2, 3));
    Var loss = total(square_op(x));
    loss.backward(/*retain_graph=*/true);
    loss.backward();  // allowed: the first call retained the graph
    CHECK(x.grad().to_vector() == std::vector<double>{4, 8, 12});
    CHECK_ERROR_MENTIONS(loss.backward(), "was freed by an earlier backward");
}

TEST_CASE("autograd: backward needs a one-element output or an explicit output gradient") {
    Var x = Var::parameter(vector3(1, 2, 3));
    Var y = square_op(x);
    CHECK_ERROR_MENTIONS(y.backward(), "pass an output gradient");
    CHECK_ERROR_MENTIONS(y.backward(Tensor::zeros({2}, Dtype::Float64)), "does not match the output");
    y.backward(vector3(1, 0, -1));
    CHECK(x.grad().to_vector() == std::vector<double>{2, 0, -6});
    CHECK_ERROR_MENTIONS(Var(vector3(1, 2, 3)).backward(vector3(1, 1, 1)), "does not depend on anything");
}

TEST_CASE("autograd: a backward returning a wrongly shaped gradient is caught") {
    Var x = Var::parameter(vector3(1, 2, 3));
    Var bad = Var::from_op("bad", sum(x.value()), {x},
                           [](const Tensor& dy) -> Grads { return {Tensor::zeros({2}, Dtype::Float64)}; });
    CHECK_ERROR_MENTIONS(bad.backward(), "backward of 'bad' returned a gradient of shape [2]");
}

TEST_CASE("autograd: a backward returning a gradient of the wrong dtype is caught") {
    Var x = Var::parameter(vector3(1, 2, 3));
    Var bad = Var::from_op("bad", sum(x.value()), {x},
                           [](const Tensor& dy) -> Grads { return {Tensor::zeros({3}, Dtype::Float32)}; });
    CHECK_ERROR_MENTIONS(bad.backward(), "dtype float32 for input 0 of shape [3] and dtype float64");
}

// The walk must release the inputs of a node that received no gradient: W feeds h = x·W and
// a second product; h feeds an op whose backward returns "no gradient" for it. W's node
// waits for both edges; if h's node were dropped without passing its count on, W would never
// run and the second path's gradient would be lost.
TEST_CASE("autograd: a node that gets no gradient still releases its inputs (other paths' gradients arrive)") {
    Tensor x = Tensor::from_vector({1, 2}, {1, 2}, Dtype::Float64);
    Tensor x2 = Tensor::from_vector({3, 5}, {1, 2}, Dtype::Float64);
    Var W = Var::parameter(Tensor::from_vector({0.5, -1, 2, 0.25}, {2, 2}, Dtype::Float64));
    auto product = [](const Tensor& row, const Var& weight) {  // row·W: dL/dW = row^T · dL/dy
        return Var::from_op("product", matmul(row, weight.value()), {Var(row), weight},
                            [row](const Tensor& dy) -> Grads { return {Tensor(), matmul(row, dy, Transpose::First)}; });
    };
    Var h = product(x, W);
    Var blocked = Var::from_op("blocked", h.value().clone(), {h}, [](const Tensor&) -> Grads { return {Tensor()}; });
    Var loss = plus(total(blocked), total(product(x2, W)));
    loss.backward();
    // Only the second path reaches W: dL/dW = x2^T · [1, 1].
    REQUIRE(W.grad().defined());
    CHECK(W.grad().to_vector() == std::vector<double>{3, 3, 5, 5});

    // The same through a chain: the node with no gradient sits two ops above the shared leaf.
    Var a = Var::parameter(vector3(1, 2, 3));
    Var doubled = square_op(a);
    Var cut = Var::from_op("cut", doubled.value().clone(), {doubled}, [](const Tensor&) -> Grads { return {Tensor()}; });
    Var out = plus(total(cut), total(times(a, Var(vector3(4, 5, 6)))));
    out.backward();
    REQUIRE(a.grad().defined());
    CHECK(a.grad().to_vector() == std::vector<double>{4, 5, 6});
}

TEST_CASE("autograd: a deep chain does not overflow the stack") {
    Var x = Var::parameter(vector3(1, 1, 1));
    Var y = x;
    for (int i = 0; i < 20000; ++i)
        y = Var::from_op("identity", y.value(), {y}, [](const Tensor& dy) -> Grads { return {dy}; });
    total(y).backward();
    CHECK(x.grad().to_vector() == std::vector<double>{1, 1, 1});
}

TEST_CASE("autograd: retain_grad keeps an op output's gradient; a plain one keeps none") {
    Var x = Var::parameter(vector3(1, 2, 3));
    Var y = square_op(x), z = times(y, y);  // L = sum(z) = sum(x^4): dL/dz = 1, dL/dy = 2y, dL/dx = 4x^3
    y.retain_grad();
    CHECK(y.retains_grad());
    CHECK_FALSE(z.retains_grad());
    total(z).backward();
    CHECK(y.grad().to_vector() == std::vector<double>{2, 8, 18});
    CHECK_FALSE(z.grad().defined());
    CHECK(x.grad().to_vector() == std::vector<double>{4, 32, 108});
    y.zero_grad();
    CHECK_FALSE(y.grad().defined());
    CHECK_THROWS_WITH_AS(Var(vector3(1, 2, 3)).retain_grad(), doctest::Contains("requires no gradient"), Error);
}

TEST_CASE("autograd: hooks see the gradient reaching a Var and may replace it") {
    Var x = Var::parameter(vector3(1, 2, 3));
    Var y = square_op(x);
    std::vector<double> seen;
    y.register_hook([&](const Tensor& g) {
        seen = g.to_vector();
        return g * 10.0;  // dL/dy scaled: x gets 10 · 2x
    });
    x.register_hook([](const Tensor&) { return Tensor(); });  // undefined: the gradient as it is
    total(y).backward();
    CHECK(seen == std::vector<double>{1, 1, 1});
    CHECK(x.grad().to_vector() == std::vector<double>{20, 40, 60});

    Var w = Var::parameter(vector3(1, 2, 3));
    Var v = square_op(w);
    v.register_hook([](const Tensor& g) { return sum(g); });  // the wrong shape
    CHECK_THROWS_WITH_AS(total(v).backward(), doctest::Contains("a hook on the output of 'square' returned"), Error);
}
