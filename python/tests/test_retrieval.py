"""The tokenizer, embedding texts (bit for bit with `nce encode --text`), BM25, FAISS and
exact search, the retrieval metrics, and a tiny retriever trained end to end."""
import math

import numpy as np
import pytest

import nce
from conftest import assert_bitwise_equal, run_program

TOPICS = ["river", "mountain", "forest", "desert", "ocean", "island", "valley", "glacier"]
PASSAGES = [f"the {topic} is home to {animal} and {plant} near the {place}"
            for topic, animal, plant, place in zip(TOPICS, ["otters", "goats", "deer", "camels", "whales",
                                                            "parrots", "horses", "seals"],
                                                   ["reeds", "pines", "oaks", "cacti", "kelp", "palms", "grass",
                                                    "moss"],
                                                   ["town", "peak", "trail", "dune", "reef", "beach", "farm", "ice"])]
QUERIES = [f"where do {animal} live" for animal in ["otters", "goats", "deer", "camels", "whales", "parrots",
                                                    "horses", "seals"]]


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    directory = tmp_path_factory.mktemp("tokenizer")
    return nce.Tokenizer.train(PASSAGES + QUERIES, str(directory), vocab_size=120, exact_vocab_size=False, seed=1)


def test_tokenizer_encodes_decodes_and_loads(tokenizer):
    ids, mask = tokenizer.encode(["where do otters live", "hi"], max_length=6)
    assert ids.dtype == np.int64 and mask.dtype == np.int64 and ids.shape == mask.shape and ids.shape[1] <= 6
    assert tokenizer.decode(tokenizer.encode_ids(PASSAGES[0])) == PASSAGES[0]
    again = nce.Tokenizer(tokenizer.model_path)
    assert again.encode_ids(QUERIES[3]) == tokenizer.encode_ids(QUERIES[3])
    assert 0 < tokenizer.vocab_size <= 120
    with pytest.raises(ValueError):
        tokenizer.encode([""], max_length=4)


def test_tokenizer_with_identifier_words_reads_names_as_words(tmp_path):
    lines = [f"return the {a} {b}\n{a}_{b} = {a}{b.capitalize()}()" for a in TOPICS for b in TOPICS]
    tokenizer = nce.Tokenizer.train(lines, str(tmp_path), vocab_size=80, exact_vocab_size=False, seed=1,
                                    identifier_words=True)
    again = nce.Tokenizer(tokenizer.model_path)
    assert tokenizer.reads_identifier_words and again.reads_identifier_words
    assert again.encode_ids("riverMountain") == again.encode_ids("river mountain")
    plain = nce.Tokenizer.train(lines, str(tmp_path / "plain"), vocab_size=80, exact_vocab_size=False, seed=1)
    assert not plain.reads_identifier_words
    assert plain.encode_ids("riverMountain") != plain.encode_ids("river mountain")


def test_embed_equals_nce_encode_text_bit_for_bit(tokenizer, nce_exe, tmp_path):
    model = nce.make_model({"kind": "text_encoder", "vocab_size": tokenizer.vocab_size, "max_len": 24,
                            "d_model": 16, "nhead": 2, "dim_feedforward": 32, "num_layers": 1}, seed=4)
    model.save(str(tmp_path / "model.safetensors"))
    (tmp_path / "texts.txt").write_text("\n".join(PASSAGES) + "\n")
    code, _, stderr = run_program([nce_exe, "encode", "--model", str(tmp_path / "model.safetensors"), "--text",
                                   str(tmp_path / "texts.txt"), "--tokenizer", tokenizer.model_path,
                                   "--max-length", "24", "--out", str(tmp_path / "e.npy")])
    assert code == 0, stderr
    embeddings = model.embed(tokenizer, PASSAGES, max_length=24)
    assert_bitwise_equal(embeddings, np.load(tmp_path / "e.npy"), "text embeddings")
    assert model.training  # embed leaves the mode as it found it


def bm25_reference(documents, query, k1=1.2, b=0.75):
    average = sum(map(len, documents)) / len(documents)
    scores = []
    for document in documents:
        score = 0.0
        for token in query:
            df = sum(token in other for other in documents)
            tf = document.count(token)
            idf = math.log(1 + (len(documents) - df + 0.5) / (df + 0.5))
            score += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len(document) / average))
        scores.append(score)
    return np.array(scores)


def test_bm25_scores_and_search(tokenizer):
    documents = [tokenizer.encode_ids(passage) for passage in PASSAGES]
    queries = [tokenizer.encode_ids(query) for query in QUERIES]
    bm25 = nce.BM25(documents)
    assert bm25.document_count == len(PASSAGES)
    assert np.allclose(bm25.scores(queries[0]), bm25_reference(documents, queries[0]), rtol=1e-12, atol=0)
    indices, scores = bm25.search(queries, k=3)
    assert indices.shape == (8, 3) and scores.dtype == np.float64
    for query, row in zip(queries, indices):
        reference = bm25_reference(documents, query)
        assert list(row) == list(np.argsort(-reference, kind="stable")[:3])  # ties: lower index first
    with pytest.raises(ValueError):
        bm25.search(queries, k=0)


def test_faiss_flat_equals_exact_search_and_saves(tmp_path):
    rng = np.random.default_rng(0)
    corpus = rng.standard_normal((50, 8)).astype(np.float32)
    corpus /= np.linalg.norm(corpus, axis=1, keepdims=True)
    queries = corpus[:5] + 0.01
    index = nce.FaissIndex.build(corpus)
    assert index.size == 50 and index.dimension == 8
    indices, scores = index.search(queries, k=4)
    exact_indices, exact_scores = nce.exact_search(queries, corpus, k=4)
    assert np.array_equal(indices, exact_indices) and np.allclose(scores, exact_scores, atol=1e-6)
    assert np.array_equal(indices[:, 0], np.arange(5))
    index.save(str(tmp_path / "index.faiss"))
    assert np.array_equal(nce.FaissIndex.load(str(tmp_path / "index.faiss")).search(queries, k=4)[0], indices)
    with_ids = nce.FaissIndex.build(corpus, ids=np.arange(100, 150))
    assert np.array_equal(with_ids.search(queries, k=1)[0][:, 0], np.arange(100, 105))
    hnsw = nce.FaissIndex.build(corpus, kind="hnsw")
    assert hnsw.search(queries, k=1)[0].shape == (5, 1)


def test_retrieval_metrics_and_passage_index_errors(tmp_path):
    metrics = nce.retrieval_metrics(np.array([[0, 1], [2, 1]]), [[1], [0]], ks=[1, 2])
    assert metrics[1]["recall"] == 0.0 and metrics[2]["recall"] == 0.5 and metrics[2]["mrr"] == 0.25
    with pytest.raises(ValueError):
        nce.retrieval_metrics([[0]], [[]], ks=[1])
    with pytest.raises(ValueError, match=str(tmp_path / "missing")):
        nce.search_passage_index(str(tmp_path / "missing"), "query")
    with pytest.raises(ValueError, match="unknown ranker 'fancy'; use dense, bm25 or hybrid"):
        nce.search_passage_index(str(tmp_path / "missing"), "query", ranker="fancy")


def test_a_tiny_retriever_trains_and_is_scored_beside_bm25(tokenizer):
    model = nce.make_model({"kind": "text_encoder", "vocab_size": tokenizer.vocab_size, "max_len": 24,
                            "d_model": 32, "nhead": 2, "dim_feedforward": 64, "num_layers": 1, "dropout": 0.0},
                           seed=0)
    optimizer = nce.AdamW(model, lr=3e-3)
    generator = nce.Generator(0)
    q_ids, q_mask = tokenizer.encode(QUERIES, max_length=24)
    p_ids, p_mask = tokenizer.encode(PASSAGES, max_length=24)
    for _ in range(60):
        nce.train_step(model, optimizer, lambda: nce.infonce(model.encode(q_ids, q_mask, generator),
                                                             model.encode(p_ids, p_mask, generator), tau=0.05))
    index = nce.FaissIndex.build(model.embed(tokenizer, PASSAGES))
    dense, _ = index.search(model.embed(tokenizer, QUERIES), k=3)
    lexical, _ = nce.BM25([tokenizer.encode_ids(p) for p in PASSAGES]).search(
        [tokenizer.encode_ids(q) for q in QUERIES], k=3)
    relevant = [[i] for i in range(len(QUERIES))]
    dense_recall = nce.retrieval_metrics(dense, relevant, ks=[1])[1]["recall"]
    bm25_recall = nce.retrieval_metrics(lexical, relevant, ks=[1])[1]["recall"]
    assert dense_recall == 1.0  # it fits its eight training pairs
    assert 0.0 <= bm25_recall <= 1.0
