"""Every engine op from Python equals the same op run in plain C++ (op_reference), bit for
bit: values and the gradient of every float input, in float32 and float64."""
import os

import numpy as np
import pytest

import nce
from conftest import assert_bitwise_equal, run_program, save_inputs


RANDOM = np.random.default_rng(0)


def normal(*shape):
    return RANDOM.standard_normal(shape)


def positive(*shape):
    return np.abs(normal(*shape)) + 0.5


# (case id, op, float inputs a/b/c, constant tensors, op_reference parameters, the Python call)
CASES = [
    ("matmul", "matmul", {"a": normal(3, 4), "b": normal(4, 5)}, {}, {}, lambda v, k: nce.matmul(v["a"], v["b"])),
    ("matmul_second", "matmul", {"a": normal(3, 4), "b": normal(5, 4)}, {}, {"transpose": "second"},
     lambda v, k: nce.matmul(v["a"], v["b"], transpose="second")),
    ("matmul_batched", "matmul", {"a": normal(2, 3, 4), "b": normal(4, 5)}, {}, {},
     lambda v, k: nce.matmul(v["a"], v["b"])),
    ("affine", "affine", {"a": normal(3, 4), "b": normal(5, 4), "c": normal(5)}, {}, {},
     lambda v, k: nce.affine(v["a"], v["b"], v["c"])),
    ("add", "add", {"a": normal(3, 4), "b": normal(4)}, {}, {}, lambda v, k: nce.add(v["a"], v["b"])),
    ("sub", "sub", {"a": normal(3, 4), "b": normal(3, 1)}, {}, {}, lambda v, k: nce.sub(v["a"], v["b"])),
    ("mul", "mul", {"a": normal(3, 4), "b": normal(3, 4)}, {}, {}, lambda v, k: nce.mul(v["a"], v["b"])),
    ("div", "div", {"a": normal(3, 4), "b": positive(3, 4)}, {}, {}, lambda v, k: nce.div(v["a"], v["b"])),
    ("neg", "neg", {"a": normal(3, 4)}, {}, {}, lambda v, k: nce.neg(v["a"])),
    ("add_scalar", "add_scalar", {"a": normal(3, 4)}, {}, {"s": "0.5"}, lambda v, k: nce.add_scalar(v["a"], 0.5)),
    ("mul_scalar", "mul_scalar", {"a": normal(3, 4)}, {}, {"s": "-1.5"}, lambda v, k: nce.mul_scalar(v["a"], -1.5)),
    ("exp", "exp", {"a": normal(3, 4)}, {}, {}, lambda v, k: nce.exp(v["a"])),
    ("log", "log", {"a": positive(3, 4)}, {}, {}, lambda v, k: nce.log(v["a"])),
    ("sqrt", "sqrt", {"a": positive(3, 4)}, {}, {}, lambda v, k: nce.sqrt(v["a"])),
    ("tanh", "tanh", {"a": normal(3, 4)}, {}, {}, lambda v, k: nce.tanh(v["a"])),
    ("sigmoid", "sigmoid", {"a": normal(3, 4)}, {}, {}, lambda v, k: nce.sigmoid(v["a"])),
    ("relu", "relu", {"a": normal(3, 4)}, {}, {}, lambda v, k: nce.relu(v["a"])),
    ("pow_number", "pow", {"a": normal(3, 4)}, {}, {"exponent": "3"}, lambda v, k: nce.pow(v["a"], 3.0)),
    ("pow_var", "pow", {"a": positive(3, 4), "b": normal(3, 4)}, {}, {}, lambda v, k: nce.pow(v["a"], v["b"])),
    ("gelu", "gelu", {"a": normal(3, 4)}, {}, {}, lambda v, k: nce.gelu(v["a"])),
    ("gelu_tanh", "gelu", {"a": normal(3, 4)}, {}, {"approximation": "tanh"},
     lambda v, k: nce.gelu(v["a"], approximation="tanh")),
    ("sum_all", "sum", {"a": normal(3, 4)}, {}, {}, lambda v, k: nce.sum(v["a"])),
    ("sum_axis", "sum", {"a": normal(3, 4)}, {}, {"axis": "1", "keepdim": "1"},
     lambda v, k: nce.sum(v["a"], axis=1, keepdim=True)),
    ("mean_axis", "mean", {"a": normal(3, 4)}, {}, {"axis": "0"}, lambda v, k: nce.mean(v["a"], axis=0)),
    ("max_axis", "max", {"a": normal(3, 4)}, {}, {"axis": "-1"}, lambda v, k: nce.max(v["a"], axis=-1)),
    ("max_all", "max", {"a": normal(3, 4)}, {}, {}, lambda v, k: nce.max(v["a"])),
    ("reshape", "reshape", {"a": normal(3, 4)}, {}, {"shape": "4,3"}, lambda v, k: nce.reshape(v["a"], [4, 3])),
    ("permute", "permute", {"a": normal(2, 3, 4)}, {}, {"axes": "2,0,1"},
     lambda v, k: nce.permute(v["a"], [2, 0, 1])),
    ("transpose", "transpose", {"a": normal(2, 3, 4)}, {}, {"axis_a": "0", "axis_b": "2"},
     lambda v, k: nce.transpose(v["a"], 0, 2)),
    ("slice", "slice", {"a": normal(3, 5)}, {}, {"axis": "1", "start": "1", "end": "4"},
     lambda v, k: nce.slice(v["a"], 1, 1, 4)),
    ("concat", "concat", {"a": normal(2, 3), "b": normal(4, 3)}, {}, {"axis": "0"},
     lambda v, k: nce.concat([v["a"], v["b"]], 0)),
    ("stack", "stack", {"a": normal(2, 3), "b": normal(2, 3), "c": normal(2, 3)}, {}, {"axis": "1"},
     lambda v, k: nce.stack([v["a"], v["b"], v["c"]], 1)),
    ("index_select", "index_select", {"a": normal(6, 3)}, {"indices": np.array([[0, 5], [2, 0]], np.int64)}, {},
     lambda v, k: nce.index_select(v["a"], k["indices"])),
    ("softmax", "softmax", {"a": normal(3, 4)}, {}, {}, lambda v, k: nce.softmax(v["a"])),
    ("log_softmax", "log_softmax", {"a": normal(3, 4)}, {}, {}, lambda v, k: nce.log_softmax(v["a"])),
    ("cross_entropy", "cross_entropy", {"a": normal(3, 4)}, {"targets": np.array([0, 3, 1], np.int64)}, {},
     lambda v, k: nce.cross_entropy(v["a"], k["targets"])),
    ("layer_norm", "layer_norm", {"a": normal(3, 4), "b": normal(4), "c": normal(4)}, {}, {},
     lambda v, k: nce.layer_norm(v["a"], v["b"], v["c"])),
    ("dropout", "dropout", {"a": normal(4, 5)}, {}, {"p": "0.3", "seed": "7"},
     lambda v, k: nce.dropout(v["a"], 0.3, nce.Generator(7))),
    ("relu_dropout", "relu_dropout", {"a": normal(4, 5)}, {}, {"p": "0.3", "seed": "7"},
     lambda v, k: nce.relu_dropout(v["a"], 0.3, nce.Generator(7))),
    ("masked_mean_pool", "masked_mean_pool", {"a": normal(2, 3, 4)},
     {"mask": np.array([[1, 1, 0], [1, 0, 0]], np.int64)}, {}, lambda v, k: nce.masked_mean_pool(v["a"], k["mask"])),
    ("l2_normalize", "l2_normalize", {"a": normal(3, 4)}, {}, {}, lambda v, k: nce.l2_normalize(v["a"])),
    ("attention", "scaled_dot_product_attention",
     {"a": normal(1, 2, 3, 4), "b": normal(1, 2, 3, 4), "c": normal(1, 2, 3, 4)},
     {"mask": np.array([[1, 1, 0]], np.int64)}, {},
     lambda v, k: nce.scaled_dot_product_attention(v["a"], v["b"], v["c"], k["mask"])),
    ("packed_attention", "packed_attention", {"a": normal(2, 3, 12)},
     {"mask": np.array([[1, 1, 1], [1, 1, 0]], np.int64)}, {"heads": "2"},
     lambda v, k: nce.packed_attention(v["a"], k["mask"], heads=2)),
]


def test_every_engine_op_is_bound_and_covered():
    ops = {case[1] for case in CASES}
    assert ops == {"matmul", "affine", "add", "sub", "mul", "div", "neg", "add_scalar", "mul_scalar", "exp", "log",
                   "sqrt", "tanh", "sigmoid", "relu", "pow", "gelu", "sum", "mean", "max", "reshape", "permute",
                   "transpose", "slice", "concat", "stack", "index_select", "softmax", "log_softmax",
                   "cross_entropy", "layer_norm", "dropout", "relu_dropout", "masked_mean_pool", "l2_normalize",
                   "scaled_dot_product_attention", "packed_attention"}
    for op in ops:
        assert callable(getattr(nce, op))


def test_every_op_documents_its_arguments_shapes_and_backward():
    """help(nce.<op>) reads as a reference: typed parameters (never pybind11's 'handle'), the
    shapes, the backward in one line, and the page or source file where it is derived."""
    root = os.path.join(os.path.dirname(__file__), "..", "..")
    for op in {case[1] for case in CASES}:
        doc = getattr(nce, op).__doc__
        signature = doc.splitlines()[0]
        assert "handle" not in signature, signature
        assert "Var | array_like" in signature or op in ("concat", "stack"), signature
        assert "Backward:" in doc, op
        assert "[" in doc or "any shape" in doc or "elementwise" in doc, f"{op}: no shapes in {doc!r}"
        places = [word.rstrip(".,;") for word in doc.split() if word.startswith(("docs/", "engine/ops/"))]
        assert places, f"{op}: names no derivation"
        for place in places:
            assert os.path.exists(os.path.join(root, place)), f"{op}: {place} does not exist"


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("case", CASES, ids=[case[0] for case in CASES])
def test_op_equals_cpp_bit_for_bit(case, dtype, op_reference, tmp_path):
    _, op, floats, constants, parameters, call = case
    floats = {name: value.astype(dtype) for name, value in floats.items()}
    variables = {name: nce.Var(value, requires_grad=True) for name, value in floats.items()}
    output = call(variables, constants)
    dy = np.random.default_rng(3).standard_normal(output.shape).astype(dtype)
    output.backward(dy)

    save_inputs(tmp_path / "in", {**floats, **constants, "dy": dy})
    code, _, stderr = run_program([op_reference, op, str(tmp_path / "in"), str(tmp_path / "out")] +
                                  [f"{key}={value}" for key, value in parameters.items()])
    assert code == 0, stderr
    assert_bitwise_equal(output.numpy(), np.load(tmp_path / "out" / "value.npy"), f"{op} value")
    for name, variable in variables.items():
        expected = tmp_path / "out" / f"grad_{name}.npy"
        assert os.path.exists(expected), f"{op}: the C++ run gave no gradient for {name}"
        assert_bitwise_equal(variable.grad, np.load(expected), f"{op} gradient of {name}")


def test_attention_mask_is_a_keep_mask_under_its_own_name():
    """nce's mask is nonzero = a real key; PyTorch's key_padding_mask means the opposite, so
    nce does not take that name: passing it by habit is an error, not a silent inversion."""
    q = nce.Var(normal(1, 1, 3, 4))
    keep = np.array([[1, 1, 0]], np.int64)
    by_name = np.asarray(nce.scaled_dot_product_attention(q, q, q, keep_mask=keep))
    np.testing.assert_array_equal(by_name, np.asarray(nce.scaled_dot_product_attention(q, q, q, keep)))
    with pytest.raises(TypeError):
        nce.scaled_dot_product_attention(q, q, q, key_padding_mask=keep)
    qkv = nce.Var(normal(1, 3, 12))
    with pytest.raises(TypeError):
        nce.packed_attention(qkv, key_padding_mask=keep, heads=2)
    assert "key_padding_mask, where True = padding" in nce.scaled_dot_product_attention.__doc__
    assert "nonzero = a real token, kept" in nce.packed_attention.__doc__


def test_no_signature_names_a_cpp_type():
    """Every function's and method's signature says what it takes in Python's words: no
    pybind11 'handle', no C++ type such as nce::data::Tokenizer."""
    import inspect
    offenders = []
    for name in dir(nce):
        if name.startswith("_"):
            continue
        owner = getattr(nce, name)
        members = [(name, owner)]
        if inspect.isclass(owner):
            members += [(f"{name}.{member}", getattr(owner, member)) for member in dir(owner)
                        if not member.startswith("_") or member in ("__init__", "__getitem__", "__matmul__")]
        for label, member in members:
            if not callable(member):
                continue
            signatures = [line for line in (member.__doc__ or "").splitlines() if "(" in line and "->" in line]
            offenders += [f"{label}: {line}" for line in signatures if "handle" in line or "::" in line]
    assert not offenders, "\n".join(offenders)


def test_every_loss_names_its_contract_and_derivation():
    root = os.path.join(os.path.dirname(__file__), "..", "..")
    losses = [name for name in dir(nce) if "The registry's loss" in (getattr(getattr(nce, name), "__doc__", "") or "")]
    assert len(losses) >= 20
    for name in losses:
        doc = getattr(nce, name).__doc__
        assert "docs/losses_contract.md" in doc, name
        page = f"docs/derivations/{name}.md"
        assert page in doc and os.path.exists(os.path.join(root, page)), f"{name}: {page}"

