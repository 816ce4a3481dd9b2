"""Models from Python: make, save, load, encode (bit for bit with `nce encode`), the model's
own parameters, optimizers and train_step."""
import numpy as np
import pytest

import nce
from conftest import assert_bitwise_equal, run_program

CONFIG = {"kind": "text_encoder", "vocab_size": 40, "max_len": 12, "d_model": 16, "nhead": 2,
          "dim_feedforward": 32, "num_layers": 1, "dropout": 0.1}


def batch(seed, rows=6, length=8):
    rng = np.random.default_rng(seed)
    ids = rng.integers(2, CONFIG["vocab_size"], size=(rows, length))
    mask = np.ones((rows, length), np.int64)
    for row in range(rows):
        mask[row, rng.integers(2, length + 1):] = 0
    return np.where(mask == 1, ids, 0), mask


def test_make_save_load_keeps_config_and_parameters(tmp_path):
    model = nce.make_model(CONFIG, seed=3)
    assert model.config["d_model"] == 16 and model.config["kind"] == "text_encoder"
    names = [name for name, _ in model.parameters()]
    assert "embeddings.weight" in names or any(name.endswith("weight") for name in names)
    assert model.parameter_count == sum(var.numpy().size for _, var in model.parameters())
    model.save(str(tmp_path / "model.safetensors"))
    loaded = nce.load_model(str(tmp_path / "model.safetensors"))
    assert loaded.config == model.config
    for (name, a), (other, b) in zip(model.parameters(), loaded.parameters()):
        assert name == other and np.array_equal(a.numpy(), b.numpy())


def test_make_model_errors_are_value_errors():
    with pytest.raises(ValueError, match="colour"):
        nce.make_model({**CONFIG, "colour": 1})
    with pytest.raises(ValueError):
        nce.make_model({**CONFIG, "nhead": 3})


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_encode_equals_nce_encode_bit_for_bit(dtype, nce_exe, tmp_path):
    nce.make_model(CONFIG, seed=5).save(str(tmp_path / "model.safetensors"))
    ids, mask = batch(0)
    np.save(tmp_path / "ids.npy", ids)
    np.save(tmp_path / "mask.npy", mask)
    code, _, stderr = run_program([nce_exe, "encode", "--model", str(tmp_path / "model.safetensors"), "--tokens",
                                   str(tmp_path / "ids.npy"), "--mask", str(tmp_path / "mask.npy"), "--out",
                                   str(tmp_path / "e.npy"), "--dtype", dtype])
    assert code == 0, stderr
    model = nce.load_model(str(tmp_path / "model.safetensors"), dtype=dtype)
    model.eval()
    with nce.no_grad():
        embeddings = model.encode(ids, mask)
    assert_bitwise_equal(embeddings.numpy(), np.load(tmp_path / "e.npy"), "embeddings")


def test_train_step_lowers_the_loss_and_updates_the_models_own_parameters():
    model = nce.make_model(CONFIG, seed=1)
    optimizer = nce.AdamW(model, lr=3e-3)
    generator = nce.Generator(7)
    (q_ids, q_mask), (p_ids, p_mask) = batch(1), batch(2)
    name, first = model.parameters()[0]
    before = first.numpy().copy()

    def loss():
        return nce.infonce(model.encode(q_ids, q_mask, generator), model.encode(p_ids, p_mask, generator), tau=0.1)

    losses = [nce.train_step(model, optimizer, loss, max_grad_norm=1.0) for _ in range(40)]
    assert optimizer.step_count == 40
    assert np.mean(losses[-5:]) < losses[0] * 0.5
    assert not np.array_equal(first.numpy(), before)  # the Var handed out is the model's own
    assert first.grad is not None


def test_a_loop_written_by_hand_equals_train_step():
    def run(by_hand):
        model = nce.make_model(CONFIG, seed=2)
        optimizer = nce.SGD(model.parameters(), lr=0.1, momentum=0.9)
        generator = nce.Generator(3)
        (q_ids, q_mask), (p_ids, p_mask) = batch(4), batch(5)
        for _ in range(3):
            def loss():
                return nce.infonce(model.encode(q_ids, q_mask, generator), model.encode(p_ids, p_mask, generator))
            if by_hand:
                optimizer.zero_grad()
                value = loss()
                value.backward()
                optimizer.step()
            else:
                nce.train_step(model, optimizer, loss)
        return [var.numpy().copy() for _, var in model.parameters()]

    for a, b in zip(run(True), run(False)):
        assert np.array_equal(a, b)


def test_learnable_temperature_and_optimizer_settings():
    model = nce.make_model({**CONFIG, "learnable_temperature": True}, seed=0)
    assert model.log_tau is not None and model.temperature() == pytest.approx(0.07)
    optimizer = nce.Adam(model, lr=1e-3, betas=(0.8, 0.99))
    optimizer.lr = 5e-4
    assert optimizer.lr == 5e-4 and optimizer.name == "Adam"
    with pytest.raises(ValueError):
        optimizer.lr = -1.0
    assert nce.clip_grad_norm(model, 1.0) == 0.0  # no gradients yet
    with pytest.raises(TypeError):
        nce.SGD([1, 2], lr=0.1)
