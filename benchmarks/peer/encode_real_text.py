#!/usr/bin/env python3
"""Encoding real text: nce's model.encode against SentenceTransformer.encode, the same model
folder, the same texts, the same batch size and thread count, each side in its own process.

    PYTHONPATH=$(bash scripts/python_peers.sh sentence-transformers):build/python \\
        python3 benchmarks/peer/encode_real_text.py --model FOLDER [--threads 2] [--batch-size 64] [--reps 3]

The texts are the paragraphs of this repository's Markdown files and 40-line pieces of its
C++ sources (so any clone has them), cut to at most 2,000 characters: varied lengths, as
real corpora have. Both sides sort by length and pad each batch to its longest text
(sentence-transformers' encode, nce's retrieval/model/text_model.h), truncating at the model's
max_seq_length. Prints one JSON line per side (texts/s, the median of --reps timed runs after
one untimed) and the ratio nce / sentence-transformers, and the largest difference between
the two sides' embeddings.
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def repository_texts():
    texts = []
    for path in sorted(glob.glob(os.path.join(REPO, "**", "*.md"), recursive=True)):
        if "/build" in path or "/subprojects/" in path:
            continue
        with open(path, encoding="utf-8") as handle:
            texts += [p.strip()[:2000] for p in handle.read().split("\n\n") if len(p.strip()) >= 40]
    for path in sorted(glob.glob(os.path.join(REPO, "engine", "**", "*.cpp"), recursive=True)):
        with open(path, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
        texts += ["\n".join(lines[i:i + 40])[:2000] for i in range(0, len(lines), 40)]
    return texts


def run_side(side, arguments, texts):
    """Encodes `texts` --reps times after one warm-up; returns (seconds per pass, embeddings)."""
    import numpy
    if side == "nce":
        import nce
        model = nce.load_model(arguments.model)
        encode = lambda: numpy.asarray(model.encode(texts, batch_size=arguments.batch_size))
    else:
        import torch
        from sentence_transformers import SentenceTransformer
        torch.set_num_threads(arguments.threads)
        model = SentenceTransformer(arguments.model, device="cpu")
        encode = lambda: model.encode(texts, batch_size=arguments.batch_size, convert_to_numpy=True,
                                      normalize_embeddings=False)
    embeddings = encode()
    times = []
    for _ in range(arguments.reps):
        start = time.perf_counter()
        encode()
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2], embeddings


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="a sentence-transformers folder (e.g. all-MiniLM-L6-v2)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--side", choices=["nce", "sentence-transformers"], help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    texts = repository_texts()
    if arguments.side:  # one side, in this process
        import numpy
        seconds, embeddings = run_side(arguments.side, arguments, texts)
        numpy.save(arguments.out, embeddings.astype(numpy.float32))
        print(json.dumps({"side": arguments.side, "texts": len(texts), "seconds": seconds,
                          "texts_per_s": len(texts) / seconds, "threads": arguments.threads,
                          "batch_size": arguments.batch_size}), flush=True)
        return 0
    import numpy
    import tempfile
    environment = dict(os.environ, NCE_NUM_THREADS=str(arguments.threads), OPENBLAS_NUM_THREADS="1",
                       OMP_NUM_THREADS=str(arguments.threads), OMP_WAIT_POLICY="PASSIVE", HF_HUB_OFFLINE="1",
                       MALLOC_MMAP_THRESHOLD_="17179869184", MALLOC_TRIM_THRESHOLD_="17179869184",
                       MALLOC_TOP_PAD_="1073741824")
    environment.pop("OPENBLAS_CORETYPE", None)
    results, embeddings = {}, {}
    with tempfile.TemporaryDirectory() as scratch:
        for side in ("nce", "sentence-transformers"):
            out = os.path.join(scratch, side + ".npy")
            command = [sys.executable, os.path.abspath(__file__), "--side", side, "--out", out, "--model",
                       arguments.model, "--threads", str(arguments.threads), "--batch-size",
                       str(arguments.batch_size), "--reps", str(arguments.reps)]
            completed = subprocess.run(command, env=environment, capture_output=True, text=True)
            lines = [line for line in completed.stdout.splitlines() if line.startswith("{")]
            if completed.returncode != 0 or not lines:
                print(f"encode_real_text: the {side} side failed: {(completed.stderr.strip().splitlines() or ['?'])[-1]}",
                      file=sys.stderr)
                return 1
            print(lines[-1], flush=True)
            results[side] = json.loads(lines[-1])
            embeddings[side] = numpy.load(out)
    ratio = results["sentence-transformers"]["seconds"] / results["nce"]["seconds"]
    difference = float(numpy.abs(embeddings["nce"] - embeddings["sentence-transformers"]).max())
    print(f"{results['nce']['texts']} texts, batch {arguments.batch_size}, {arguments.threads} threads: nce "
          f"{results['nce']['texts_per_s']:.1f} texts/s, sentence-transformers "
          f"{results['sentence-transformers']['texts_per_s']:.1f} texts/s, nce / sentence-transformers {ratio:.2f}; "
          f"largest difference between the embeddings {difference:.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
