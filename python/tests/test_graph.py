"""nce.to_dot and nce.keep_values: the same DOT text as `nce graph` for the same graph."""
import os

import numpy as np
import pytest

import nce
from conftest import run_program, save_inputs


def infonce_graph(q, p):
    qv = nce.Var(q, requires_grad=True)
    pv = nce.Var(p, requires_grad=True)
    with nce.keep_values():
        loss = nce.infonce(qv, pv)
    loss.backward()
    return loss, {"q": qv, "p": pv, "L": loss}


def test_to_dot_equals_the_command_line(nce_exe, tmp_path):
    rng = np.random.default_rng(1)
    q, p = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    save_inputs(tmp_path, {"q": q, "p": p})
    code, _, stderr = run_program([nce_exe, "graph", "infonce", "--inputs", str(tmp_path), "--values",
                                   "--output", str(tmp_path / "cli.dot")])
    assert code == 0, stderr
    loss, names = infonce_graph(q, p)
    text = nce.to_dot(loss, values=True, names=names, title=f"nce graph infonce: inputs from {tmp_path}, float64")
    assert text == (tmp_path / "cli.dot").read_text()


def test_to_dot_labels_ops_shapes_and_dtypes():
    x = nce.Var(np.ones((2, 3), dtype=np.float32), requires_grad=True)
    y = nce.sum(nce.relu(x))
    text = nce.to_dot(y, names={"x": x})
    assert text.startswith("digraph nce {")
    assert "relu\\n[2, 3] float32" in text
    assert "x\\nparameter, requires_grad\\n[2, 3] float32" in text
    assert "value" not in text  # values only when asked
    assert text == nce.to_dot(y, names={"x": x})  # the same graph, the same text


def test_keep_values_cannot_be_entered_twice():
    context = nce.keep_values()
    with context:
        with pytest.raises(ValueError, match="already entered"):
            context.__enter__()


def test_draw_gives_a_graph_jupyter_draws_inline(tmp_path, monkeypatch):
    """nce.draw: str() is to_dot's text; _repr_svg_ is Graphviz's drawing where `dot` is on PATH,
    and without it None, so that Jupyter shows _repr_markdown_ (the DOT text) instead."""
    x = nce.Var(np.ones((2, 3)), requires_grad=True)
    y = nce.sum(nce.relu(x))
    graph = nce.draw(y, names={"x": x}, title="relu")
    assert isinstance(graph, nce.Graph)
    assert str(graph) == graph.dot == nce.to_dot(y, names={"x": x}, title="relu")
    assert repr(graph).startswith("<nce.Graph: ")
    graph.save(str(tmp_path / "g.dot"))
    assert (tmp_path / "g.dot").read_text() == graph.dot
    import shutil
    if shutil.which("dot"):
        svg = graph._repr_svg_()
        assert svg is not None and "<svg" in svg and "relu" in svg
        assert graph._repr_markdown_() is None  # the picture is what Jupyter shows
        graph.save(str(tmp_path / "g.svg"))
        assert "<svg" in (tmp_path / "g.svg").read_text()
    monkeypatch.setenv("PATH", str(tmp_path))  # no Graphviz
    assert graph._repr_svg_() is None
    assert "```dot\n" + graph.dot in graph._repr_markdown_()
    with pytest.raises(ValueError, match="needs Graphviz's dot"):
        graph.save(str(tmp_path / "h.svg"))
