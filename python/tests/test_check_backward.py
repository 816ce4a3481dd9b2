"""nce.check_backward: a NumPy forward and a hand-written backward against central
differences in float64; a wrong backward fails with its worst entry named."""
import numpy as np
import pytest

import nce

TAU = 0.1


def infonce_forward(q, p):
    logits = q @ p.T / TAU
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_probabilities = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    return -np.mean(np.diag(log_probabilities))


def infonce_backward(grad, q, p):
    # dL/dl = (P - Y) / N;  dL/dq = dL/dl · p / tau;  dL/dp = (dL/dl)^T · q / tau
    logits = q @ p.T / TAU
    probabilities = np.exp(logits - logits.max(axis=1, keepdims=True))
    probabilities /= probabilities.sum(axis=1, keepdims=True)
    d_logits = grad * (probabilities - np.eye(len(q))) / len(q)
    return d_logits @ p / TAU, d_logits.T @ q / TAU


def unit_rows(rows, dim, seed):
    x = np.random.default_rng(seed).standard_normal((rows, dim))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_a_correct_infonce_backward_passes_and_matches_nce():
    q, p = unit_rows(4, 3, 0), unit_rows(4, 3, 1)
    result = nce.check_backward(infonce_forward, infonce_backward, {"q": q, "p": p})
    assert result.passed and bool(result)
    assert result.max_rel_error < 1e-8
    assert [entry["name"] for entry in result.inputs] == ["q", "p"]
    assert "pass" in repr(result)
    # The derivation agrees with the engine's own InfoNCE.
    qv, pv = nce.Var(q, requires_grad=True), nce.Var(p, requires_grad=True)
    loss = nce.infonce(qv, pv, tau=TAU)
    loss.backward()
    assert abs(loss.item() - infonce_forward(q, p)) < 1e-12
    assert np.allclose(qv.grad, result.inputs[0]["analytic"], atol=1e-12)
    assert np.allclose(pv.grad, result.inputs[1]["analytic"], atol=1e-12)


def test_a_wrong_backward_fails_naming_the_worst_entry():
    def forgets_the_key_side(grad, q, p):  # dL/dp without the (P - Y)^T: a typical slip
        dq, dp = infonce_backward(grad, q, p)
        logits = q @ p.T / TAU
        probabilities = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
        return dq, (probabilities - np.eye(len(q))) @ q / TAU / len(q)

    q, p = unit_rows(4, 3, 2), unit_rows(4, 3, 3)
    result = nce.check_backward(infonce_forward, forgets_the_key_side, {"q": q, "p": p})
    assert not result.passed and not bool(result)
    worst = result.worst
    assert worst["input"] == "p" and len(worst["index"]) == 2
    assert worst["rel_error"] == result.max_rel_error > 1e-3
    assert abs(worst["analytic"] - worst["numeric"]) == pytest.approx(worst["abs_error"])
    assert "FAIL" in str(result) and "worst entry: p[" in str(result)
    assert result.inputs[0]["max_rel_error"] < 1e-8  # q's gradient is still right


def test_array_output_integer_data_and_dict_gradients():
    def softmax_forward(x, labels):
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True) * (1.0 + labels[:, None])

    def softmax_backward(grad, x, labels):
        s = softmax_forward(x, labels) / (1.0 + labels[:, None])
        g = grad * (1.0 + labels[:, None])
        return {"x": s * (g - (g * s).sum(axis=1, keepdims=True))}

    x = np.random.default_rng(4).standard_normal((3, 5))
    labels = np.array([0, 2, 1])
    result = nce.check_backward(softmax_forward, softmax_backward, {"x": x, "labels": labels})
    assert result.passed and [entry["name"] for entry in result.inputs] == ["x"]


def test_list_inputs_single_gradient_and_mistakes():
    x = np.array([0.5, -1.0, 2.0])
    assert nce.check_backward(lambda v: np.sum(v ** 3), lambda g, v: 3 * g * v ** 2, [x]).passed
    assert not nce.check_backward(lambda v: np.sum(v ** 3), lambda g, v: 2 * g * v ** 2, [x]).passed
    with pytest.raises(ValueError, match="has shape"):
        nce.check_backward(lambda v: np.sum(v), lambda g, v: np.ones(2), [x])
    with pytest.raises(ValueError, match="returned 1 gradients for 2 inputs"):
        nce.check_backward(lambda a, b: np.sum(a * b), lambda g, a, b: (b,), [x, x])
