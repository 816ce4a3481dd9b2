#!/usr/bin/env bash
# Fine-tuning a pretrained encoder, nce against sentence-transformers, side by side in one run:
#
#   bash benchmarks/peer/finetune_peer.sh FORMAT DATA [MODEL] [THREADS] [NCE TRAIN FLAGS...]
#
#   FORMAT DATA  what `nce data pairs` reads: posts Posts.xml (a StackExchange site), python
#                FOLDER (a Python source tree), korquad, ranked-json or csn FILE
#   MODEL        a known packaged model (scripts/pretrained.sh; default all-MiniLM-L6-v2) or a
#                model folder
#   THREADS      threads of both sides (default 2)
#   FLAGS        more flags for `nce train` (e.g. --max-steps 30); the peer takes the settings
#                they change from the run's config.json
#
# 1. `nce data pairs` splits the data by group into train.csv and validation.csv (the test set).
# 2. `nce train --init MODEL --train train.csv --validation validation.csv` fine-tunes with the
#    fine-tuning defaults (infonce at tau 0.05 = MultipleNegativesRankingLoss at scale 20, one
#    epoch, learning rate 2e-5, warmup a tenth) and keeps the last step (--evaluate-every 0),
#    so that both sides keep the model their last step made.
# 3. benchmarks/peer/finetune_peer.py fine-tunes MODEL with sentence-transformers on the same
#    training queries (nce's split.json) with the settings of nce's config.json.
# 4. `nce train eval --checkpoint <nce's model> --versus <the peer's folder>` scores both with
#    nce's evaluation on the test set: one table, each row with its interval and its paired test
#    against BM25, then the paired test nce minus sentence-transformers.
# Last, the seconds per training step of each side and their ratio.
#
# Runs as a careful user would run the peer: threads matched (NCE_NUM_THREADS, OMP and torch),
# OPENBLAS_CORETYPE unset, glibc's allocator told to keep its memory. Writes into
# $NCE_PEER_OUT (default: a new folder under /tmp, kept, its path printed).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
[[ $# -ge 2 ]] || { sed -n '2,12p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 2; }
format="$1" data="$2" model="${3:-all-MiniLM-L6-v2}" threads="${4:-2}"
train_flags=("${@:5}")
nce="${NCE:-$root/build/apps/nce}"
[[ -x "$nce" ]] || { echo "finetune_peer: no $nce; build it first (ninja -C build apps/nce)" >&2; exit 2; }
[[ -d "$model" ]] || model="$(bash "$root/scripts/pretrained.sh" "$model")"
peers="$(bash "$root/scripts/python_peers.sh" sentence-transformers)"
out="${NCE_PEER_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/nce_finetune_peer_XXXXXX")}"
mkdir -p "$out"

unset OPENBLAS_CORETYPE
export NCE_NUM_THREADS="$threads" OMP_NUM_THREADS="$threads" MKL_NUM_THREADS="$threads"
export MALLOC_MMAP_THRESHOLD_=17179869184 MALLOC_TRIM_THRESHOLD_=17179869184 MALLOC_TOP_PAD_=1073741824
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false

echo "== machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $threads threads," \
     "$(grep -o -m1 -w 'avx512_bf16\|amx_bf16\|avx512f\|avx2' /proc/cpuinfo | sort -u | tr '\n' ' ')"
echo "== pairs: $format $data"
"$nce" data pairs --format "$format" --data "$data" --output "$out/pairs"
echo "== nce: fine-tuning $model"
"$nce" train --train "$out/pairs/train.csv" --validation "$out/pairs/validation.csv" --init "$model" \
    --evaluate-every 0 --output "$out/nce" "${train_flags[@]}" | grep -E "^(fine-tuning|plan|trained|training a)"
echo "== sentence-transformers: fine-tuning $model on the same queries with the same settings"
peer_json="$(PYTHONPATH="$peers" python3 "$root/benchmarks/peer/finetune_peer.py" --run "$out/nce" \
    --train "$out/pairs/train.csv" --output "$out/sentence-transformers" --threads "$threads" 2>"$out/peer.log")" ||
    { tail -5 "$out/peer.log" >&2; exit 1; }
echo "$peer_json"
echo "== both scored by nce on validation.csv"
"$nce" train eval --output "$out/compare" --checkpoint "$out/nce/model.safetensors" \
    --versus "$out/sentence-transformers"
/usr/bin/python3 - "$out/nce/results.json" "$peer_json" <<'PY'
import json, sys
training = json.load(open(sys.argv[1]))["training"]
peer = json.loads(sys.argv[2])
nce_step = training["seconds"] / training["steps"]
print(f"seconds per training step: nce {nce_step:.2f}, sentence-transformers {peer['seconds_per_step']:.2f} "
      f"(torch {peer['torch']}); nce / sentence-transformers = {nce_step / peer['seconds_per_step']:.2f}")
PY
echo "== everything is in $out"
