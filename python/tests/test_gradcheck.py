"""nce.gradcheck: the engine's checker on Python functions of Vars, the same table as
`nce gradcheck`, the rows as data, and a failing function reported as FAIL."""
import numpy as np
import pytest

import nce
from conftest import run_program


def test_python_function_passes_and_returns_its_row(capsys):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))

    def composite(x, w):
        return nce.sum(nce.tanh(nce.matmul(x, w)) * 2.0)

    rows = nce.gradcheck(composite, [a, b])
    assert len(rows) == 1
    row = rows[0]
    assert row["op"] == "composite" and row["inputs"] == "[3, 4], [4, 2]"
    assert row["passed"] and row["max_rel_error"] < 1e-6 and row["tolerance"] == 1e-6
    assert [entry["shape"] for entry in row["per_input"]] == [(3, 4), (4, 2)]
    assert row["per_input"][0]["analytic"].shape == (1, 12)
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith("gradcheck: central differences, float64 (threads ")
    assert printed[1].split() == ["op", "inputs", "max", "abs", "err", "max", "rel", "err", "result"]
    assert printed[2].startswith("composite") and printed[2].endswith("pass")
    assert printed[3] == "1 passed, 0 failed (tolerance 1e-06 on the relative error)"


def test_float32_eps_name_and_constant_inputs(capsys):
    x = np.random.default_rng(1).standard_normal((2, 3))
    mask = np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]])
    rows = nce.gradcheck(lambda v, m: nce.sum(v * m), [x, mask], dtype="float32", eps=1e-2, name="masked",
                         constant_inputs=[1], quiet=True)
    assert rows[0]["op"] == "masked" and rows[0]["passed"] and len(rows[0]["per_input"]) == 1
    assert capsys.readouterr().out == ""


def test_a_function_whose_backward_is_wrong_fails():
    draws = iter(range(10**6))

    def changing_mask(x):  # a new dropout mask every call: the numeric gradient sees other masks
        return nce.sum(nce.dropout(x, 0.5, nce.Generator(next(draws))))

    rows = nce.gradcheck(changing_mask, [np.ones((4, 4))], quiet=True)
    assert not rows[0]["passed"]


@pytest.mark.parametrize("op", ["softmax", "infonce"])
def test_registered_op_prints_the_same_table_as_the_cli(op, nce_exe, capsys):
    rows = nce.gradcheck(op)
    printed = capsys.readouterr().out
    code, cli_out, stderr = run_program([nce_exe, "gradcheck", op])
    assert code == 0, stderr
    assert printed == cli_out
    assert len(rows) == len(cli_out.splitlines()) - 3 and all(row["op"] == op and row["passed"] for row in rows)


def test_wrong_arguments():
    with pytest.raises(TypeError):
        nce.gradcheck(lambda x: 3.0, [np.ones(2)], quiet=True)
    with pytest.raises(ValueError, match="unknown op 'nothing'"):
        nce.gradcheck("nothing")
    with pytest.raises(TypeError):
        nce.gradcheck(lambda x: x)


def test_the_report_is_one_line_per_op_and_still_the_rows():
    """nce.gradcheck returns a GradcheckReport: its repr one line per op (not every row's dict),
    .passed over every case, and the rows by index, len and iteration."""
    x = np.random.default_rng(3).standard_normal((3, 4))
    good = nce.gradcheck(lambda v: nce.sum(nce.relu(v) * 2.0), [x], name="doubled_relu", quiet=True)
    assert isinstance(good, nce.GradcheckReport) and good.passed and len(good) == 1
    assert [row["op"] for row in good] == ["doubled_relu"] and good.rows[0] == good[0]
    lines = repr(good).splitlines()
    assert lines[0] == "<nce gradcheck: 1 op, 0 failed; rows[i] for every case's numbers>"
    assert len(lines) == 2 and "doubled_relu" in lines[1] and " pass " in lines[1] and "array" not in repr(good)

    registered = nce.gradcheck("infonce", quiet=True)
    assert len(registered) > 1 and len(repr(registered).splitlines()) == 2  # its cases on one line
    assert f"{len(registered):>3} cases  pass" in repr(registered)

    draws = iter(range(10**6))

    def changing_mask(v):  # a new dropout mask every call: a wrong gradient by construction
        return nce.sum(nce.dropout(v, 0.5, nce.Generator(next(draws))))

    failing = nce.gradcheck(changing_mask, [np.ones((4, 4))], quiet=True)
    assert not failing.passed and "FAIL (1 of 1)" in repr(failing)
