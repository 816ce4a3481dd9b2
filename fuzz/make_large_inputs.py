#!/usr/bin/env python3
"""Writes the fuzz replay's large inputs (fuzz/README.md): valid or hostile files far larger
than libFuzzer's inputs, each of a class that once took time or memory growing faster than
its size. A reader must take them in time and memory proportional to their size; the replay
test's timeout is what holds it to that (a quadratic reader needs minutes to hours on these).

Usage: make_large_inputs.py OUTPUT...   (each OUTPUT's file name says which input to write)
"""
import json
import struct
import sys
from pathlib import Path


def safetensors_many_entries(path):
    # 200,000 tensors of one float each: an 11 MB header (a duplicate-key check that rescans
    # the object at each key was quadratic: 80,000 entries took 71 s).
    entries = {f"t{i}": {"dtype": "F32", "shape": [], "data_offsets": [4 * i, 4 * i + 4]} for i in range(200_000)}
    header = json.dumps(entries, separators=(",", ":")).encode()
    path.write_bytes(struct.pack("<Q", len(header)) + header + bytes(4 * 200_000))


def text_unknown_characters(path):
    # 1,000,000 CJK ideographs, none a piece of the Korean seed model (600,000 took 85 s inside
    # SentencePiece when the whole text reached it).
    path.write_text("".join(chr(0x4E00 + (i * 7919) % 20000) for i in range(1_000_000)), encoding="utf-8")


def npy_many_axes(path):
    # 400,000 axes of size 1: a 1.2 MB header, refused in one short line.
    shape = "(" + ", ".join(["1"] * 400_000) + ",)"
    text = ("{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }").encode()
    text += b" " * ((64 - (12 + len(text) + 1) % 64) % 64) + b"\n"
    path.write_bytes(b"\x93NUMPY\x02\x00" + struct.pack("<I", len(text)) + text + bytes(4))


def pairs_one_long_line(path):
    # One 8 MB row of words (a single 50 MB line once cost 4.5 GB).
    words = " ".join(f"word{i % 5000}" for i in range(900_000))
    path.write_text(f"anchor,positive\nwhat is this?,{words}\n", encoding="utf-8")


def pairs_many_rows(path):
    # 200,000 JSON lines (a million rows once ran out of memory in the split's evaluation).
    with path.open("w", encoding="utf-8") as out:
        for i in range(200_000):
            out.write(json.dumps({"anchor": f"question {i}", "positive": f"answer {i} of many"}) + "\n")


def config_deep_nesting(path):
    # 100,000 nested arrays under one key: refused before any parser recurses into them.
    path.write_text('{"app": ' + "[" * 100_000 + "]" * 100_000 + "}")


WRITERS = {
    "large-200k-entries.safetensors": safetensors_many_entries,
    "large-1m-unknown-characters.txt": text_unknown_characters,
    "refused-400k-axes.npy": npy_many_axes,
    "large-one-8mb-line.csv": pairs_one_long_line,
    "large-200k-rows.jsonl": pairs_many_rows,
    "refused-deep-nesting.json": config_deep_nesting,
}

if __name__ == "__main__":
    for output in sys.argv[1:]:
        path = Path(output)
        if path.name not in WRITERS:
            sys.exit(f"make_large_inputs.py: no input named {path.name}; known: {', '.join(WRITERS)}")
        WRITERS[path.name](path)
