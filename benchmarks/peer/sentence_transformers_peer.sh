#!/usr/bin/env bash
# A pretrained model in nce against sentence-transformers on 1,000 real texts (half KorQuAD
# questions and passages, a quarter beer.stackexchange questions and answers, the rest pieces
# of nce's C++ sources, each on one line): tests/fixtures/make_sentence_transformers_reference.py
# encodes them with SentenceTransformer.encode (float32) and with the same pipeline in float64,
# and keeps the tokenizer's ids. Then two comparisons, each printing the largest absolute
# difference per coordinate in float32 and in float64:
#   the model alone: test_nn's parity case feeds those ids to nce's bert;
#   end to end: `nce encode --model FOLDER --text` reads the same texts with nce's tokenizer.
#
#   bash benchmarks/peer/sentence_transformers_peer.sh [BUILD_DIR] [COUNT] [MODEL]
#
# MODEL: all-MiniLM-L6-v2 (default) or multilingual-e5-small. Needs build/ (tests/test_nn and
# apps/nce), ../shared/data, and downloads the model and the Python peers into nce's cache on
# first use (scripts/pretrained.sh, scripts/python_peers.sh).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${1:-$root/build}"
count="${2:-1000}"
name="${3:-all-MiniLM-L6-v2}"
case "$name" in
    all-MiniLM-L6-v2) variable=NCE_ST_REFERENCE; test_case="*all-MiniLM-L6-v2 gives sentence-transformers' embeddings*" ;;
    multilingual-e5-small) variable=NCE_ST_REFERENCE_E5; test_case="*multilingual-e5-small converted*" ;;
    *) echo "sentence_transformers_peer: MODEL is all-MiniLM-L6-v2 or multilingual-e5-small, not '$name'" >&2; exit 2 ;;
esac
model="$(NCE_EXE="$build/apps/nce" bash "$root/scripts/pretrained.sh" "$name")"
peers="$(bash "$root/scripts/python_peers.sh" sentence-transformers)"
out="$(mktemp -d "${TMPDIR:-/tmp}/nce_st_peer_XXXXXX")"
trap 'rm -rf "$out"' EXIT

PYTHONPATH="$peers" HF_HUB_OFFLINE=1 python3 "$root/tests/fixtures/make_sentence_transformers_reference.py" \
    --model "$model" --count "$count" --one-line --out "$out"
echo "the model alone, on sentence-transformers' token ids:"
env "$variable=$out" NCE_SOURCE_ROOT="$root" NCE_NUM_THREADS="${NCE_NUM_THREADS:-2}" \
    "$build/tests/test_nn" -tc="$test_case" -s 2>&1 |
    grep -E "max \|nce - sentence-transformers\||test cases|assertions"
echo "end to end, nce encode --text with nce's tokenizer:"
for dtype in float32 float64; do
    NCE_NUM_THREADS="${NCE_NUM_THREADS:-2}" "$build/apps/nce" encode --model "$model" --text "$out/texts.txt" \
        --dtype "$dtype" --out "$out/nce_$dtype.npy" 2>/dev/null
done
/usr/bin/python3 - "$out" <<'PY'
import sys
import numpy as np
out = sys.argv[1]
for dtype, expected, bound in (("float32", "expected_f32", 1e-5), ("float64", "expected_f64", 1e-10)):
    ours, theirs = np.load(f"{out}/nce_{dtype}.npy"), np.load(f"{out}/{expected}.npy")
    difference = float(np.abs(ours.astype(np.float64) - theirs.astype(np.float64)).max())
    print(f"  {dtype}: {len(ours)} texts, max |nce encode - sentence-transformers| = {difference:.3g} "
          f"(bound {bound:g}): {'pass' if difference < bound else 'FAIL'}")
PY
