#!/usr/bin/env bash
# all-MiniLM-L6-v2 in nce against sentence-transformers on 1,000 real texts (half KorQuAD
# questions and passages, a quarter beer.stackexchange questions and answers, the rest pieces
# of nce's C++ sources): tests/fixtures/make_sentence_transformers_reference.py encodes them
# with SentenceTransformer.encode (float32) and with the same pipeline in float64, and keeps
# the tokenizer's ids; then test_nn's parity case feeds those ids to nce's bert in float32 and
# float64 and prints the largest absolute difference per coordinate of each.
#
#   bash benchmarks/peer/sentence_transformers_peer.sh [BUILD_DIR] [COUNT]
#
# Needs build/tests/test_nn (ninja -C build tests/test_nn), ../shared/data, and downloads
# the model and the Python peers into nce's cache on first use (scripts/pretrained.sh,
# scripts/python_peers.sh).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${1:-$root/build}"
count="${2:-1000}"
model="$(bash "$root/scripts/pretrained.sh" all-MiniLM-L6-v2)"
peers="$(bash "$root/scripts/python_peers.sh" sentence-transformers)"
out="$(mktemp -d "${TMPDIR:-/tmp}/nce_st_peer_XXXXXX")"
trap 'rm -rf "$out"' EXIT

PYTHONPATH="$peers" HF_HUB_OFFLINE=1 python3 "$root/tests/fixtures/make_sentence_transformers_reference.py" \
    --model "$model" --count "$count" --out "$out"
NCE_ST_REFERENCE="$out" NCE_SOURCE_ROOT="$root" NCE_NUM_THREADS="${NCE_NUM_THREADS:-2}" \
    "$build/tests/test_nn" -tc="*gives sentence-transformers' embeddings*" -s 2>&1 |
    grep -E "max \|nce - sentence-transformers\||test cases|assertions"
