"""nce's passage index served from a persistent ChromaDB collection.

`nce <app> index` writes an index folder: the chunks' embeddings (embeddings.npy, the
vectors of index.faiss), their text and passage (chunks.jsonl) and the model that encoded
them. This module puts those embeddings into a ChromaDB collection on disk, with the ids and
the passage metadata, and answers a query by embedding it with the same model and prompt as
`nce <app> search`, so the two give the same top 10 (up to ties):

    python3 -m nce_chroma write runs/korquad/index --chroma runs/korquad/chroma
    python3 -m nce_chroma search --chroma runs/korquad/chroma "질문" [-k 10]

or from Python (PYTHONPATH holds nce's module and chromadb):

    import nce_chroma
    nce_chroma.write_collection("runs/korquad/index", "runs/korquad/chroma")
    hits = nce_chroma.search("runs/korquad/chroma", "질문", k=10)

Each chunk's id is `<passage_id>#<n>` (its n-th chunk, from 0), its metadata the passage id,
its group and n, its document the chunk's text. The collection measures the inner product
(the embeddings are unit rows, so it is the cosine) and searches its HNSW graph with a wide
beam (ef_search 512), exact on collections of up to a few thousand chunks. The collection's
metadata names the index folder, whose model embeds the queries. chromadb is installed into
nce's cache by `bash scripts/python_peers.sh chromadb`.
"""
import argparse
import json
import os
import shutil
import sys

import numpy as np

COLLECTION = "passages"
SEARCH_BEAM = 512


class Error(Exception):
    """A problem with the user's folders, said in one line."""


def _chromadb():
    try:
        import chromadb
    except ImportError:
        raise Error("chromadb is not importable: put $(bash scripts/python_peers.sh chromadb) on PYTHONPATH") from None
    return chromadb


def _client(path):
    chromadb = _chromadb()
    return chromadb.PersistentClient(path=path, settings=chromadb.config.Settings(anonymized_telemetry=False))


def read_index_info(index_dir):
    """The index folder's index.json (its lengths, prompts and counts)."""
    info_path = os.path.join(index_dir, "index.json")
    if not os.path.isfile(info_path):
        raise Error(f"{index_dir}: no index.json, so no complete index folder there (nce <app> index --index DIR writes one)")
    with open(info_path, encoding="utf-8") as f:
        return json.load(f)


def read_index(index_dir):
    """The index folder's chunks (dicts with passage_id, group, text), embeddings [chunks, d] and index.json."""
    info = read_index_info(index_dir)
    embeddings_path = os.path.join(index_dir, "embeddings.npy")
    if not os.path.isfile(embeddings_path):
        raise Error(f"{index_dir}: no embeddings.npy (an index written before nce kept them); run nce <app> index again")
    embeddings = np.load(embeddings_path)
    with open(os.path.join(index_dir, "chunks.jsonl"), encoding="utf-8") as f:
        chunks = [json.loads(line) for line in f if line.strip()]
    if embeddings.ndim != 2 or len(chunks) != embeddings.shape[0] or len(chunks) != info.get("chunks"):
        raise Error(f"{index_dir}: {len(chunks)} chunks, embeddings of shape {embeddings.shape} and index.json's "
                    f"{info.get('chunks')} chunks disagree; run nce <app> index again")
    return chunks, embeddings.astype(np.float32), info


def chunk_ids(chunks):
    """Each chunk's id, <passage_id>#<n>, and n, its place among its passage's chunks."""
    seen = {}
    ids, numbers = [], []
    for chunk in chunks:
        n = seen.get(chunk["passage_id"], 0)
        seen[chunk["passage_id"]] = n + 1
        ids.append(f"{chunk['passage_id']}#{n}")
        numbers.append(n)
    return ids, numbers


def write_collection(index_dir, chroma_dir, name=COLLECTION):
    """Writes the index folder's chunks into a new persistent collection at chroma_dir; returns its size.

    chroma_dir must not exist yet (or be empty); if writing fails, nothing is left there."""
    chunks, embeddings, info = read_index(index_dir)
    if os.path.exists(chroma_dir) and (not os.path.isdir(chroma_dir) or os.listdir(chroma_dir)):
        raise Error(f"{chroma_dir} already exists and is not an empty folder; choose a new path")
    ids, numbers = chunk_ids(chunks)
    client = None
    try:
        client = _client(chroma_dir)
        collection = client.create_collection(
            name, metadata={"hnsw:space": "ip", "hnsw:search_ef": SEARCH_BEAM, "hnsw:construction_ef": SEARCH_BEAM,
                            "nce_index": os.path.abspath(index_dir), "query_prompt": info.get("query_prompt", ""),
                            "max_query_length": int(info["max_query_length"])})
        step = client.get_max_batch_size()
        for start in range(0, len(ids), step):
            end = min(start + step, len(ids))
            collection.add(ids=ids[start:end], embeddings=embeddings[start:end],
                           documents=[c["text"] for c in chunks[start:end]],
                           metadatas=[{"passage_id": c["passage_id"], "group": c["group"], "chunk": n}
                                      for c, n in zip(chunks[start:end], numbers[start:end])])
        return collection.count()
    except BaseException:
        shutil.rmtree(chroma_dir, ignore_errors=True)
        raise


def query_embedding(index_dir, query, model=None):
    """The query's embedding [1, d] by the index folder's model, after its query prompt, as nce search reads it."""
    import nce
    info = read_index_info(index_dir)
    model = model or nce.load_model(os.path.join(index_dir, "model.safetensors"))
    return model.encode([query], prompt="query", max_length=int(info["max_query_length"]))


def search(chroma_dir, query, k=10, name=COLLECTION, model=None):
    """The top k chunks for a query text: dicts of score (the cosine), passage_id, group, text, id."""
    if not os.path.isdir(chroma_dir):
        raise Error(f"{chroma_dir}: no such folder (python3 -m nce_chroma write INDEX --chroma DIR writes one)")
    collection = _client(chroma_dir).get_collection(name)
    embedding = query_embedding(collection.metadata["nce_index"], query, model)
    found = collection.query(query_embeddings=embedding, n_results=k,
                             include=["documents", "metadatas", "distances"])
    return [{"score": 1.0 - distance, "passage_id": meta["passage_id"], "group": meta["group"], "text": text,
             "id": chunk_id}
            for chunk_id, text, meta, distance in zip(found["ids"][0], found["documents"][0], found["metadatas"][0],
                                                      found["distances"][0])]


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python3 -m nce_chroma", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    write = commands.add_parser("write", help="an nce index folder into a new ChromaDB collection")
    write.add_argument("index", help="the folder nce <app> index wrote")
    write.add_argument("--chroma", required=True, help="the collection's folder (must not exist)")
    find = commands.add_parser("search", help="the top k chunks for a query, by the index's model")
    find.add_argument("query")
    find.add_argument("--chroma", required=True, help="the collection's folder")
    find.add_argument("-k", "--top-k", type=int, default=10)
    args = parser.parse_args(argv)
    try:
        if args.command == "write":
            count = write_collection(args.index, args.chroma)
            print(f"nce_chroma: wrote {count} chunks of {args.index} into the collection '{COLLECTION}' at {args.chroma}")
        else:
            for rank, hit in enumerate(search(args.chroma, args.query, args.top_k), 1):
                text = " ".join(hit["text"].split())
                print(f"{rank:>3}  {hit['score']:.4f}  {hit['passage_id']}  {text[:160]}")
    except Error as error:
        print(f"nce_chroma: error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
