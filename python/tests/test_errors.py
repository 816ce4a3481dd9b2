"""Errors arrive as exceptions: the engine's one-line messages as ValueError (nce.Error),
the same line `nce loss` prints; wrong Python types as TypeError."""
import numpy as np
import pytest

import nce
from conftest import run_program, save_inputs


def cli_error(nce_exe, tmp_path, name, inputs, settings=()):
    """The one line `nce loss` prints on stderr after 'nce: error: '."""
    save_inputs(tmp_path / "in", inputs)
    command = [nce_exe, "loss", name, "--inputs", str(tmp_path / "in"), "--out", str(tmp_path / "out")]
    for setting in settings:
        command += ["--set", setting]
    code, _, stderr = run_program(command)
    assert code != 0
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("nce: error: ")
    return lines[0][len("nce: error: "):]


def python_error(call):
    with pytest.raises(ValueError) as caught:
        call()
    assert isinstance(caught.value, nce.Error)
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_bad_shape_is_the_clis_line(nce_exe, tmp_path):
    inputs = {"q": np.ones((3, 4)), "p": np.ones((3, 5))}
    expected = cli_error(nce_exe, tmp_path, "infonce", inputs)
    assert python_error(lambda: nce.infonce(**inputs)) == expected


@pytest.mark.parametrize("settings, parameters", [
    (["tau=-1"], {"tau": -1}),
    (["tau=0"], {"tau": 0.0}),
    (["metric=manhattan"], {"metric": "manhattan"}),
    (["colour=red"], {"colour": "red"}),
])
def test_bad_parameter_is_the_clis_line(settings, parameters, nce_exe, tmp_path):
    name = "triplet" if "metric" in parameters else "infonce"
    inputs = nce.loss_example(name, rows=3, dim=4)
    if name == "infonce":
        inputs.pop("log_tau")
    expected = cli_error(nce_exe, tmp_path, name, inputs, settings)
    assert python_error(lambda: getattr(nce, name)(**inputs, **parameters)) == expected


def test_missing_input_is_a_value_error_naming_it():
    assert "required input p is missing" in python_error(lambda: nce.infonce(q=np.ones((2, 3))))


def test_engine_op_errors_are_value_errors():
    assert python_error(lambda: nce.matmul(np.ones((2, 3)), np.ones((2, 3)))).startswith("matmul")
    python_error(lambda: nce.sum(np.ones((2, 3)), axis=5))
    python_error(lambda: nce.matmul(np.ones((2, 2)), np.ones((2, 2)), transpose="sideways"))
    python_error(lambda: nce.Tensor(np.ones(2)).to("float16"))
    python_error(lambda: nce.sum(nce.Var(np.ones((2, 2)), requires_grad=True) * 2.0, axis=0).backward())


def test_python_type_mistakes_are_type_errors():
    with pytest.raises(TypeError):
        nce.infonce(np.ones((2, 2)), np.ones((2, 2)), tau=object())
    with pytest.raises(TypeError):
        nce.infonce(1, 2, 3, 4, 5)
    with pytest.raises(TypeError):
        nce.infonce(np.ones((2, 2)), q=np.ones((2, 2)))
    with pytest.raises(TypeError):
        nce.relu(np.ones(3, np.complex128))


def test_an_exception_in_a_python_callback_passes_through():
    def broken(x):
        raise KeyError("from the callback")
    with pytest.raises(KeyError, match="from the callback"):
        nce.gradcheck(broken, [np.ones(2)], quiet=True)


def test_the_module_still_works_after_errors():
    for _ in range(3):
        with pytest.raises(ValueError):
            nce.infonce(np.ones((3, 4)), np.ones((3, 5)))
    assert np.isfinite(nce.infonce(np.eye(3), np.eye(3)).item())
