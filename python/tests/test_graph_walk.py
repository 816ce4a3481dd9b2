"""Walking the graph from Python: grad_fn (the op, its inputs' nodes, their shapes),
retain_grad() on an op's output, the one line for .grad of an output that keeps none, and
gradient hooks."""
import numpy as np
import pytest

import nce

X = np.array([1.0, 2.0, 3.0])


def test_grad_fn_names_the_op_its_inputs_and_shapes():
    v = nce.Var(X, requires_grad=True)
    c = nce.Var(np.ones(3))
    y = v * c + v
    assert v.grad_fn is None and c.grad_fn is None
    assert y.grad_fn.name == "add"
    mul, leaf = y.grad_fn.next_functions
    assert mul.name == "mul" and leaf.name == "leaf"
    assert mul.next_functions[1] is None  # the constant
    assert mul.input_shapes == [(3,), (3,)] and mul.input_dtypes == ["float64", "float64"]
    assert repr(y.grad_fn) == "<nce.GradFn add([3] float64, [3] float64)>"


def test_retain_grad_keeps_an_output_gradient_and_grad_without_it_is_one_line():
    v = nce.Var(X, requires_grad=True)
    y = v * v
    z = y * 3.0
    y.retain_grad()
    nce.sum(z).backward()
    np.testing.assert_array_equal(y.grad, [3.0, 3.0, 3.0])
    np.testing.assert_array_equal(v.grad, 6 * X)
    with pytest.raises(ValueError) as error:
        z.grad
    message = str(error.value)
    assert "output of 'mul_scalar', not a leaf" in message and "retain_grad()" in message and "\n" not in message
    assert nce.Var(X).grad is None  # a constant: no gradient, and nothing to ask for


def test_hooks_see_and_may_replace_a_gradient():
    v = nce.Var(X, requires_grad=True)
    y = v * v
    seen = []
    y.register_hook(lambda g: seen.append(np.array(g)))  # returns None: the gradient as it is
    y.register_hook(lambda g: g * 0.5)
    nce.sum(y).backward()
    np.testing.assert_array_equal(seen[0], np.ones(3))
    np.testing.assert_array_equal(v.grad, 0.5 * 2 * X)
