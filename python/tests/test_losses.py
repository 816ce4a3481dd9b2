"""Every loss of the registry from Python: bound under its own name with its inputs and
parameters, and equal bit for bit to `nce loss NAME` (the loss and every gradient file) in
float64 and float32."""
import numpy as np
import pytest

import nce
from conftest import assert_bitwise_equal, run_program, save_inputs

LOSSES = nce.list_losses()
DIFFERENTIABLE = ("embedding", "scalar")


def python_loss(loss, inputs, **parameters):
    """The loss through its own Python function; embeddings and scalars as leaf Vars."""
    kinds = {spec["name"]: spec["kind"] for spec in loss["inputs"]}
    arguments = {name: nce.Var(value, requires_grad=True) if kinds[name] in DIFFERENTIABLE else value
                 for name, value in inputs.items()}
    value = getattr(nce, loss["name"])(**arguments, **parameters)
    value.backward()
    return value, arguments


def cli_loss(nce_exe, directory, name, inputs, dtype, settings=()):
    save_inputs(directory / "in", inputs)
    command = [nce_exe, "loss", name, "--inputs", str(directory / "in"), "--out", str(directory / "out"),
               "--dtype", dtype]
    for setting in settings:
        command += ["--set", setting]
    code, _, stderr = run_program(command)
    assert code == 0, stderr


def compare_with_cli(loss, inputs, value, arguments, out_dir):
    assert_bitwise_equal(np.float64(value.item()), np.load(out_dir / "loss.npy"), f"{loss['name']} loss")
    for spec in loss["inputs"]:
        name = spec["name"]
        if spec["kind"] == "data" or name not in inputs:
            continue
        expected = np.load(out_dir / f"grad_{name}.npy")
        grad = arguments[name].grad if spec["kind"] in DIFFERENTIABLE else None
        actual = np.zeros_like(expected) if grad is None else grad.astype(np.float64)  # exact widening
        assert_bitwise_equal(actual, expected, f"{loss['name']} gradient of {name}")


def test_every_registry_loss_is_a_function_with_its_signature():
    assert len(LOSSES) >= 21
    for loss in LOSSES:
        function = getattr(nce, loss["name"])
        assert loss["signature"] in function.__doc__


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("loss", LOSSES, ids=[loss["name"] for loss in LOSSES])
def test_loss_equals_cli_bit_for_bit(loss, dtype, nce_exe, tmp_path):
    inputs = nce.loss_example(loss["name"], rows=5, dim=6, seed=11, dtype=dtype)
    value, arguments = python_loss(loss, inputs)
    assert value.dtype == dtype and value.shape == ()
    cli_loss(nce_exe, tmp_path, loss["name"], inputs, dtype)
    compare_with_cli(loss, inputs, value, arguments, tmp_path / "out")


@pytest.mark.parametrize("name, parameters, settings", [
    ("infonce", {"tau": 0.07}, ["tau=0.07"]),
    ("triplet", {"margin": 0.25, "metric": "euclidean"}, ["margin=0.25", "metric=euclidean"]),
    ("ntxent", {"tau": 0.2, "mask_self": False}, ["tau=0.2", "mask_self=0"]),
    ("matryoshka", {"dims": [2, 4, 6], "weights": (1, 0.5, 2)}, ["dims=2,4,6", "weights=1,0.5,2"]),
])
def test_parameters_reach_the_loss_as_the_cli_sets_them(name, parameters, settings, nce_exe, tmp_path):
    loss = next(entry for entry in LOSSES if entry["name"] == name)
    inputs = nce.loss_example(name, rows=4, dim=6, seed=5)
    inputs.pop("log_tau", None)  # a learnable temperature would take tau's place
    value, arguments = python_loss(loss, inputs, **parameters)
    default_value, _ = python_loss(loss, inputs)
    assert value.item() != default_value.item()
    cli_loss(nce_exe, tmp_path, name, inputs, "float64", settings)
    compare_with_cli(loss, inputs, value, arguments, tmp_path / "out")


def test_inputs_by_position_by_name_and_through_nce_loss_agree():
    inputs = nce.loss_example("infonce", rows=4, dim=5, seed=2)
    by_name = nce.infonce(q=inputs["q"], p=inputs["p"], neg=inputs["neg"], tau=0.1).item()
    by_position = nce.infonce(inputs["q"], inputs["p"], inputs["neg"], tau=0.1).item()
    generic = nce.loss("infonce", inputs["q"], p=inputs["p"], neg=inputs["neg"], tau=0.1).item()
    assert by_name == by_position == generic


def test_gradient_flows_through_the_callers_vars_into_earlier_ops():
    rng = np.random.default_rng(0)
    w = nce.Var(rng.standard_normal((6, 4)), requires_grad=True)
    x, y = rng.standard_normal((5, 6)), rng.standard_normal((5, 6))
    loss = nce.infonce(nce.l2_normalize(nce.matmul(x, w)), nce.l2_normalize(nce.matmul(y, w)))
    loss.backward()
    assert w.grad is not None and w.grad.shape == (6, 4) and np.abs(w.grad).max() > 0


def test_array_inputs_are_constants():
    inputs = nce.loss_example("dcl", rows=4, dim=5)
    loss = nce.dcl(inputs["u"], inputs["v"])
    assert not loss.requires_grad
