"""nce_chroma: an nce index folder in a persistent ChromaDB collection gives nce search's top 10.

Skipped, with one line, where chromadb is not installed (bash scripts/python_peers.sh chromadb);
.ci/run installs it. The index comes from a tiny `nce korquad` run on generated data.
"""
import json
import os
import subprocess
import sys

import pytest

import nce
from conftest import run_program


def chromadb_folder():
    cache = os.environ.get("NCE_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "nce")
    folder = os.path.join(cache, "python", "chromadb")
    if not os.path.isfile(os.path.join(folder, ".complete")):
        pytest.skip("chromadb is not installed (bash scripts/python_peers.sh chromadb)")
    return folder


TINY = {"vocab_size": 400, "d_model": 32, "pretrain_steps": 3, "pretrain_batch_size": 8, "nhead": 2,
        "num_layers": 1, "dim_feedforward": 64, "max_query_length": 24, "max_passage_length": 40,
        "batch_size": 16, "max_steps": 6, "warmup_steps": 2, "evaluate_every": 0, "candidate_depth": 20,
        "app": {"articles": 12}}


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory):
    exe = os.environ.get("NCE_EXE")
    if not exe or not os.path.exists(exe):
        pytest.skip("NCE_EXE is not set to a built program (run through meson test)")
    chroma = chromadb_folder()
    if chroma not in sys.path:
        sys.path.append(chroma)  # after Debian's NumPy, which the nce module was built against
    scratch = tmp_path_factory.mktemp("chroma")
    (scratch / "tiny.json").write_text(json.dumps(TINY))
    code, out, err = run_program([exe, "korquad", "train", "--config", str(scratch / "tiny.json"),
                                  "--output", str(scratch / "run"), "--seed", "5"])
    assert code == 0, err
    code, out, err = run_program([exe, "korquad", "index", "--output", str(scratch / "run"),
                                  "--index", str(scratch / "index")])
    assert code == 0, err
    return scratch / "index"


def questions(index_dir):
    with open(index_dir.parent / "run" / "korquad_generated.json", encoding="utf-8") as f:
        data = json.load(f)["data"]
    return [qa["question"] for article in data for p in article["paragraphs"] for qa in p["qas"]][::7][:12]


def test_the_collection_gives_nce_searchs_top_10(index_dir, tmp_path):
    import nce_chroma
    count = nce_chroma.write_collection(str(index_dir), str(tmp_path / "store"))
    info = json.loads((index_dir / "index.json").read_text())
    assert count == info["chunks"]
    model = nce.load_model(str(index_dir / "model.safetensors"))
    compared = 0
    for query in questions(index_dir):
        ours = nce.search_passage_index(str(index_dir), query, 10)["hits"]
        theirs = nce_chroma.search(str(tmp_path / "store"), query, 10, model=model)
        assert len(ours) == len(theirs) == 10
        for a, b in zip(ours, theirs):
            assert abs(a["score"] - b["score"]) < 1e-5
        # Up to ties: the same chunks wherever the next score is not within 1e-5.
        for rank in range(10):
            tied = any(abs(ours[rank]["score"] - ours[other]["score"]) < 1e-5 for other in range(10) if other != rank)
            if not tied:
                assert (ours[rank]["passage_id"], ours[rank]["text"]) == (theirs[rank]["passage_id"], theirs[rank]["text"])
                compared += 1
    assert compared > 50


def test_the_collection_persists_and_the_command_line_serves_it(index_dir, tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    store = tmp_path / "store"
    done = subprocess.run([sys.executable, "-m", "nce_chroma", "write", str(index_dir), "--chroma", str(store)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "chunks of" in done.stdout
    query = questions(index_dir)[0]
    done = subprocess.run([sys.executable, "-m", "nce_chroma", "search", "--chroma", str(store), "-k", "3", query],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    first = nce.search_passage_index(str(index_dir), query, 1)["hits"][0]
    assert done.stdout.splitlines()[0].split()[2] == first["passage_id"]
    # Into a folder that holds something: one line, exit 1, the folder left as it was.
    done = subprocess.run([sys.executable, "-m", "nce_chroma", "write", str(index_dir), "--chroma", str(store)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and "already exists" in done.stderr
    assert (store / "chroma.sqlite3").exists()
