"""The operators and methods a student types on an nce.Var (v ** 2, v.T, v[i], v[a:b],
v.sum(), v.mean(), -v, v @ w, comparisons): each one's gradient against central finite
differences in float64 (nce.gradcheck), and each value against NumPy's."""
import numpy as np
import pytest

import nce

RANDOM = np.random.default_rng(3)
A = RANDOM.standard_normal((3, 4))
B = RANDOM.standard_normal((4, 2))
C = RANDOM.standard_normal((2, 3, 4))
POSITIVE = np.abs(A) + 0.5

# (id, function of Vars, inputs, the same on NumPy arrays)
FORMS = [
    ("pow_number", lambda v: v ** 2, [A], lambda a: a ** 2),
    ("pow_float", lambda v: v ** 1.5, [POSITIVE], lambda a: a ** 1.5),
    ("pow_var", lambda v, w: v ** w, [POSITIVE, A], lambda a, b: a ** b),
    ("number_to_the_var", lambda v: 2.0 ** v, [A], lambda a: 2.0 ** a),
    ("numpy_number_to_the_var", lambda v: np.float64(3.0) ** v, [A], lambda a: 3.0 ** a),
    ("transpose_2d", lambda v: v.T, [A], lambda a: a.T),
    ("transpose_3d", lambda v: v.T, [C], lambda a: a.T),
    ("index_int", lambda v: v[1], [A], lambda a: a[1]),
    ("index_negative", lambda v: v[-1], [A], lambda a: a[-1]),
    ("index_slice", lambda v: v[1:3], [A], lambda a: a[1:3]),
    ("index_open_slice", lambda v: v[:, 2:], [A], lambda a: a[:, 2:]),
    ("index_int_slice", lambda v: v[0, 1:3], [C], lambda a: a[0, 1:3]),
    ("index_two_ints", lambda v: v[1, 2], [C], lambda a: a[1, 2]),
    ("sum_method", lambda v: v.sum(), [A], lambda a: a.sum()),
    ("sum_axis", lambda v: v.sum(axis=1, keepdim=True), [A], lambda a: a.sum(axis=1, keepdims=True)),
    ("mean_method", lambda v: v.mean(axis=0), [A], lambda a: a.mean(axis=0)),
    ("neg", lambda v: -v, [A], lambda a: -a),
    ("matmul", lambda v, w: v @ w, [A, B], lambda a, b: a @ b),
    ("rmatmul_numpy", lambda w: A @ w, [B], lambda b: A @ b),
    ("scalar_div_var", lambda v: 1.0 / v, [POSITIVE], lambda a: 1.0 / a),
    ("chain", lambda v, w: ((v @ w) ** 2).T[1].sum() - v[0].mean(), [A, B],
     lambda a, b: ((a @ b) ** 2).T[1].sum() - a[0].mean()),
]


@pytest.mark.parametrize("name,function,inputs,numpy_function", FORMS, ids=[f[0] for f in FORMS])
def test_gradient_against_finite_differences(name, function, inputs, numpy_function):
    rows = nce.gradcheck(lambda *vs: nce.sum(function(*vs) * 1.0), inputs, name=name, quiet=True)
    assert rows[0]["passed"], f"{name}: max relative error {rows[0]['max_rel_error']:.3e}"


@pytest.mark.parametrize("name,function,inputs,numpy_function", FORMS, ids=[f[0] for f in FORMS])
def test_value_equals_numpy(name, function, inputs, numpy_function):
    out = function(*[nce.Var(x, requires_grad=True) for x in inputs])
    assert isinstance(out, nce.Var) and out.requires_grad
    np.testing.assert_allclose(out.numpy(), numpy_function(*inputs), rtol=1e-13, atol=1e-13)


def test_comparisons_are_constants_of_the_var_dtype():
    v = nce.Var(A.astype(np.float32), requires_grad=True)
    for out, expected in [(v > 0, A > 0), (v >= 0, A >= 0), (v < 0.5, A < 0.5), (v <= v, np.ones_like(A, bool))]:
        assert not out.requires_grad and out.dtype == "float32"
        np.testing.assert_array_equal(out.numpy(), expected.astype(np.float32))
    relu_by_hand = (v > 0) * v  # the mask is a constant: the gradient is the mask itself
    nce.sum(relu_by_hand).backward()
    np.testing.assert_array_equal(v.grad, (A > 0).astype(np.float32))


@pytest.mark.parametrize("key,words", [
    (slice(None, None, 2), "slices with a step"),
    ((0, 0, 0), "3 indices for a Var of rank 2"),
    (5, "index 5 is out of range for axis 0 of size 3"),
    (1.5, "index with integers and slices"),
])
def test_bad_index_is_one_line(key, words):
    with pytest.raises(IndexError) as error:
        nce.Var(A, requires_grad=True)[key]
    assert words in str(error.value) and "\n" not in str(error.value)


def test_negative_base_is_one_line():
    with pytest.raises(ValueError, match="needs a positive base"):
        (-2.0) ** nce.Var(A, requires_grad=True)
