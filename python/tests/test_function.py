"""nce.Function: a differentiable op written in Python (PyTorch's autograd.Function shape)
sits in the graph like an engine op: its gradient flows on, nce.gradcheck checks it (and
fails a wrong backward), and to_dot draws it under its class name."""
import numpy as np
import pytest

import nce

X = np.random.default_rng(5).standard_normal((3, 4))
W = np.random.default_rng(6).standard_normal((4, 2))


class Square(nce.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, dy):  # y = x^2: dL/dx = 2 x dL/dy
        (x,) = ctx.saved_tensors
        return 2 * x * dy


class WrongSquare(Square):
    @staticmethod
    def backward(ctx, dy):  # the factor 2 forgotten
        (x,) = ctx.saved_tensors
        return x * dy


class ScaledMatmul(nce.Function):
    """y = s · x w with a number s: two Var inputs and one that is not."""

    @staticmethod
    def forward(ctx, x, w, s):
        ctx.save_for_backward(x, w)
        ctx.s = s
        return s * (x @ w)

    @staticmethod
    def backward(ctx, dy):  # dL/dx = s dy w^T, dL/dw = s x^T dy, none for s
        x, w = ctx.saved_tensors
        return ctx.s * dy @ w.T, ctx.s * x.T @ dy, None


def test_square_in_a_graph_matches_its_closed_form():
    v = nce.Var(X, requires_grad=True)
    y = Square.apply(v)
    assert isinstance(y, nce.Var) and y.grad_fn.name == "Square"
    nce.sum(nce.tanh(y)).backward()
    np.testing.assert_allclose(v.grad, (1 - np.tanh(X**2) ** 2) * 2 * X, rtol=1e-13)


def test_gradcheck_passes_a_right_backward_and_fails_a_wrong_one():
    assert nce.gradcheck(lambda x: nce.sum(Square.apply(x)), [X], quiet=True)[0]["passed"]
    assert nce.gradcheck(lambda x, w: nce.sum(ScaledMatmul.apply(x, w, 0.5)), [X, W], quiet=True)[0]["passed"]
    assert not nce.gradcheck(lambda x: nce.sum(WrongSquare.apply(x)), [X], quiet=True)[0]["passed"]


def test_to_dot_draws_the_function_under_its_name():
    v = nce.Var(X, requires_grad=True)
    assert "Square" in nce.to_dot(nce.sum(Square.apply(v)))


def test_a_gradient_of_the_wrong_shape_is_one_line():
    class BadShape(Square):
        @staticmethod
        def backward(ctx, dy):
            return np.ones(7)

    with pytest.raises(ValueError, match="backward of 'BadShape' returned a gradient of shape"):
        nce.sum(BadShape.apply(nce.Var(X, requires_grad=True))).backward()


def test_wrong_gradient_count_and_no_var_are_one_line():
    class TwoGrads(Square):
        @staticmethod
        def backward(ctx, dy):
            return dy, dy

    with pytest.raises(ValueError, match="TwoGrads.backward returned 2 gradients; forward took 1 inputs"):
        nce.sum(TwoGrads.apply(nce.Var(X, requires_grad=True))).backward()
    with pytest.raises(TypeError, match="no argument is an nce.Var"):
        Square.apply(X)
