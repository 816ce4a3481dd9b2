"""NumPy values beside a Var: every expression stays in the graph (the NumPy side a constant)
or fails with one TypeError line; no path is ever lost silently.

Each form's gradient is checked against its closed form and, where PyTorch is importable,
against PyTorch's autograd on the same expression."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import nce

try:
    import torch
except ImportError:  # the closed forms still hold the tests
    torch = None

X = np.array([1.0, 2.0, 3.0])
A = np.array([0.5, -1.0, 2.0])
M = np.array([[1.0, 2.0, 0.0], [0.0, -1.0, 3.0]])

# (id, the expression on a Var or tensor v with np/torch as the library, dL/dv in closed form)
# L = sum(expression).
FORMS = [
    ("issue_example", lambda v, lib: v * v + 2 * lib_ones(lib) * v, 2 * X + 2),
    ("float64_scalar_left", lambda v, lib: np.float64(2) * v, np.full(3, 2.0)),
    ("float32_scalar_left", lambda v, lib: np.float32(0.5) * v, np.full(3, 0.5)),
    ("int64_scalar_left", lambda v, lib: np.int64(3) * v, np.full(3, 3.0)),
    ("array_left_mul", lambda v, lib: lib_const(lib, A) * v, A),
    ("array_left_add", lambda v, lib: lib_const(lib, A) + v * v, 2 * X),
    ("array_left_sub", lambda v, lib: lib_const(lib, A) - v * v, -2 * X),
    ("array_left_div", lambda v, lib: lib_const(lib, A) / v, -A / X**2),
    ("array_right_div", lambda v, lib: v / lib_const(lib, A + 3), 1 / (A + 3)),
    ("scalar_over_var", lambda v, lib: np.float64(2.0) / v, -2 / X**2),
    ("numpy_tau", lambda v, lib: (1 / np.float64(0.1)) * v * v, 20 * X),
    ("zero_d_array", lambda v, lib: lib_const(lib, np.array(4.0)) * v, np.full(3, 4.0)),
    ("np_exp", lambda v, lib: np.exp(v) if lib is None else torch.exp(v), np.exp(X)),
    ("np_log", lambda v, lib: np.log(v) if lib is None else torch.log(v), 1 / X),
    ("np_sqrt", lambda v, lib: np.sqrt(v) if lib is None else torch.sqrt(v), 0.5 / np.sqrt(X)),
    ("np_tanh", lambda v, lib: np.tanh(v) if lib is None else torch.tanh(v), 1 - np.tanh(X) ** 2),
    ("np_negative", lambda v, lib: np.negative(v) if lib is None else -v, np.full(3, -1.0)),
    ("np_power", lambda v, lib: np.power(v, 3) if lib is None else v**3, 3 * X**2),
]


def lib_ones(lib):
    return np.ones(3) if lib is None else torch.ones(3, dtype=torch.float64)


def lib_const(lib, array):
    return array if lib is None else torch.tensor(array)


def nce_gradient(form):
    v = nce.Var(X.copy(), requires_grad=True)
    out = form(v, None)
    assert isinstance(out, nce.Var), f"the expression left the graph: {type(out).__name__}"
    nce.sum(out).backward()
    return np.asarray(v.grad)


@pytest.mark.parametrize("name,form,expected", FORMS, ids=[f[0] for f in FORMS])
def test_numpy_operand_stays_in_graph(name, form, expected):
    np.testing.assert_allclose(nce_gradient(form), expected, rtol=1e-12, atol=1e-12)


def torch_gradients():
    """dL/dv of every form by PyTorch: here when torch imports, else in a child process on the
    Python peers' folder (scripts/python_peers.sh sentence-transformers), whose NumPy this
    build's module may not share; None when neither has PyTorch."""
    if torch is not None:
        return {name: torch_gradient(form).tolist() for name, form, _ in FORMS}
    cache = os.environ.get("NCE_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "nce")
    peers = os.path.join(cache, "python", "sentence-transformers")
    if not os.path.exists(os.path.join(peers, ".complete")):
        return None
    here = os.path.dirname(os.path.abspath(__file__))
    code = "import json, test_numpy_interop as t; print(json.dumps(t.torch_gradients()))"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([peers, here, os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.splitlines()[-1])


def torch_gradient(form):
    t = torch.tensor(X.copy(), requires_grad=True)
    form(t, torch).sum().backward()
    return t.grad.numpy()


@pytest.fixture(scope="module")
def pytorch():
    gradients = torch_gradients()
    if gradients is None:
        pytest.skip("PyTorch is not installed (bash scripts/python_peers.sh sentence-transformers); "
                    "the closed forms hold the test")
    return gradients


@pytest.mark.parametrize("name,form,expected", FORMS, ids=[f[0] for f in FORMS])
def test_numpy_operand_matches_pytorch(name, form, expected, pytorch):
    np.testing.assert_allclose(nce_gradient(form), pytorch[name], rtol=1e-12, atol=1e-12)


def test_issue_example_numbers():
    v = nce.Var(X.copy(), requires_grad=True)
    loss = nce.sum(v * v) + nce.sum(2 * np.ones(3) * v)
    loss.backward()
    np.testing.assert_array_equal(v.grad, [4.0, 6.0, 8.0])


@pytest.mark.parametrize("call,what", [
    (lambda v: np.sin(v), "numpy.sin"),
    (lambda v: np.add.reduce(v), "numpy.add.reduce"),
    (lambda v: np.exp(v, out=np.empty(3)), "numpy.exp"),
    (lambda v: np.dot(np.ones(3), v), "numpy.dot"),
    (lambda v: np.concatenate([v, v]), "numpy.concatenate"),
])
def test_numpy_without_an_op_refuses_with_one_line(call, what):
    v = nce.Var(X.copy(), requires_grad=True)
    with pytest.raises(TypeError) as error:
        call(v)
    message = str(error.value)
    assert what in message and "lose the gradient" in message and "\n" not in message


def test_array_left_of_matmul_stays_in_graph():
    v = nce.Var(np.ones((3, 2)), requires_grad=True)
    out = M @ v  # ndarray.__matmul__ hands over to the Var: matmul(M, v), dL/dv = M^T 1
    assert isinstance(out, nce.Var)
    nce.sum(out).backward()
    np.testing.assert_array_equal(v.grad, M.T @ np.ones((2, 2)))


def test_asarray_reads_the_value():
    v = nce.Var(X.copy(), requires_grad=True)
    np.testing.assert_array_equal(np.asarray(v), X)


def test_constant_var_still_works_with_numpy():
    c = nce.Var(X.copy())
    np.testing.assert_allclose(np.sin(c), np.sin(X))
    np.testing.assert_allclose(np.dot(np.ones(3), c), X.sum())
    np.testing.assert_allclose(np.asarray(c), X)
    assert np.concatenate([c, c]).shape == (6,)


def test_float32_var_keeps_its_dtype_with_numpy_scalars():
    v = nce.Var(X.astype(np.float32), requires_grad=True)
    out = np.float64(2.0) * v + np.float32(1.0)
    assert isinstance(out, nce.Var) and out.dtype == "float32"


def numpy_2_folder():
    """The Python peers' folder (scripts/python_peers.sh), which holds a NumPy 2, when installed."""
    cache = os.environ.get("NCE_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "nce")
    folder = os.path.join(cache, "python", "sentence-transformers")
    return folder if os.path.isdir(os.path.join(folder, "numpy")) else None


def test_numpy_2_arrays_are_taken():
    """The module reads an array's dtype through Python, so NumPy 2's changed struct is no matter:
    float64, float32 and int64 arrays in, the gradient out, under the peers' NumPy 2."""
    folder = numpy_2_folder()
    if folder is None:
        pytest.skip("no NumPy 2 here (bash scripts/python_peers.sh sentence-transformers installs one)")
    program = (
        "import numpy as np, nce, json\n"
        "assert int(np.__version__.split('.')[0]) >= 2, np.__version__\n"
        "v = nce.Var(np.array([1.0, 2.0, 3.0]), requires_grad=True)\n"
        "nce.sum(v * v + np.float64(2) * v).backward()\n"
        "f = nce.Var(np.ones(2, dtype=np.float32)).numpy().dtype.name\n"
        "i = nce.Var(np.arange(3)).numpy().dtype.name\n"
        "print(json.dumps({'grad': np.asarray(v.grad).tolist(), 'float32': f, 'int64': i, 'numpy': np.__version__}))\n")
    path = os.pathsep.join([os.path.dirname(os.path.abspath(nce.__file__)), folder])
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": path}, timeout=120)
    assert done.returncode == 0, done.stderr.strip().splitlines()[-1:]
    result = json.loads(done.stdout)
    assert result["grad"] == [4.0, 6.0, 8.0] and result["float32"] == "float32" and result["int64"] == "int64"
