"""nce.Tensor and nce.Var: NumPy in and out (copy in, zero-copy read-only view out),
requires_grad, backward, grad, no_grad."""
import numpy as np
import pytest

import nce


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_tensor_round_trip_keeps_dtype_shape_and_values(dtype):
    source = (np.arange(24).reshape(2, 3, 4) - 7).astype(dtype)
    tensor = nce.Tensor(source)
    assert tensor.shape == (2, 3, 4)
    assert tensor.dtype == np.dtype(dtype).name
    out = tensor.numpy()
    assert out.dtype == dtype and np.array_equal(out, source)


def test_tensor_copies_in_and_views_out():
    source = np.ones((3, 2))
    tensor = nce.Tensor(source)
    source[0, 0] = 5  # the tensor holds its own copy
    assert tensor.numpy()[0, 0] == 1
    first, second = tensor.numpy(), np.asarray(tensor)
    assert np.shares_memory(first, second)  # both read the tensor's storage: no copy out
    assert not first.flags.writeable
    with pytest.raises(ValueError):
        first[0, 0] = 2
    writable = np.array(tensor)
    writable[0, 0] = 2  # np.array copies
    assert tensor.numpy()[0, 0] == 1


def test_view_outlives_the_tensor():
    view = nce.Tensor(np.full((100, 100), 3.0)).numpy()
    assert view.sum() == 30000.0


def test_tensor_accepts_lists_noncontiguous_and_scalars():
    assert nce.Tensor([[1.0, 2.0]]).dtype == "float64"
    assert nce.Tensor([1, 2, 3]).dtype == "int64"
    assert nce.Tensor(np.array([True, False])).dtype == "int64"
    strided = np.arange(12.0).reshape(3, 4).T
    assert np.array_equal(nce.Tensor(strided).numpy(), strided)
    scalar = nce.Tensor(np.float64(2.5))
    assert scalar.shape == () and scalar.item() == 2.5
    assert nce.Tensor(np.ones(3), dtype="float32").dtype == "float32"
    assert nce.Tensor(np.zeros((0, 4))).shape == (0, 4)


def test_unsupported_dtype_is_a_type_error():
    with pytest.raises(TypeError, match="float16 is not supported"):
        nce.Tensor(np.ones(3, np.float16))
    with pytest.raises(TypeError):
        nce.Tensor("text")


def test_var_backward_accumulates_until_zero_grad():
    x = nce.Var(np.array([1.0, -2.0, 3.0]), requires_grad=True)
    assert x.requires_grad and x.is_leaf and x.grad is None
    y = nce.sum(x * x)
    assert y.op == "sum" and not y.is_leaf
    y.backward()
    assert np.array_equal(x.grad, [2.0, -4.0, 6.0])
    nce.sum(x * 3.0).backward()
    assert np.array_equal(x.grad, [5.0, -1.0, 9.0])
    x.zero_grad()
    assert x.grad is None


def test_backward_with_an_output_gradient_and_operators():
    a = nce.Var(np.arange(6.0).reshape(2, 3), requires_grad=True)
    b = nce.Var(np.ones((3, 2)), requires_grad=True)
    y = (a @ b) * 2.0 - 1.0
    dy = np.array([[1.0, 0.0], [0.0, 1.0]])
    y.backward(dy)
    assert np.array_equal(a.grad, 2.0 * dy @ np.ones((3, 2)).T)
    assert np.array_equal(y.numpy(), (np.arange(6.0).reshape(2, 3) @ np.ones((3, 2))) * 2.0 - 1.0)
    z = 1.0 - a / 2.0 + (-a)
    assert np.array_equal(np.asarray(z), 1.0 - np.arange(6.0).reshape(2, 3) * 1.5)
    single = nce.Var(np.array([2.0, 4.0], np.float32))
    assert np.allclose(np.asarray(1.0 / single), [0.5, 0.25]) and (1.0 / single).dtype == "float32"


def test_no_grad_records_no_graph():
    w = nce.Var(np.ones((2, 2)), requires_grad=True)
    with nce.no_grad():
        assert not nce.grad_enabled()
        y = nce.sum(w * w)
    assert nce.grad_enabled()
    assert not y.requires_grad
    with pytest.raises(ValueError, match="does not depend on anything"):
        y.backward()


def test_constant_vars_and_detach():
    c = nce.Var(np.ones(3))
    assert not c.requires_grad and c.op is None
    w = nce.Var(np.ones(3), requires_grad=True)
    assert not (w * 2.0).detach().requires_grad
    w.set_value(np.zeros(3))
    assert np.array_equal(w.numpy(), np.zeros(3)) and w.is_leaf


def test_grad_is_a_view_and_value_shares_storage():
    w = nce.Var(np.ones(4), requires_grad=True)
    nce.sum(w).backward()
    assert np.shares_memory(w.grad, w.grad_tensor.numpy())
    assert np.shares_memory(w.numpy(), w.value.numpy())
