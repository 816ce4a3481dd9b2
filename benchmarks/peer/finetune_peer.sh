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
# NCE_PEER_SEEDS="13 14 15" runs steps 2 to 4 once per seed (--seed: the batches' order and
# dropout, on both sides) and ends with the training noise the test queries cannot show: nce
# against itself between two seeds (a second eval, --versus the other seed's model), beside
# each seed's nce minus sentence-transformers and their mean. A gap between the two systems
# means something only when it is larger than the gap between two seeds of one of them.
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
seeds=(${NCE_PEER_SEEDS:-13})
for seed in "${seeds[@]}"; do
    [[ "$seed" =~ ^[0-9]+$ ]] || { echo "finetune_peer: NCE_PEER_SEEDS has '$seed'; give whole numbers" >&2; exit 2; }
    run="$out/nce-$seed" peer="$out/sentence-transformers-$seed"
    echo "== seed $seed, nce: fine-tuning $model"
    "$nce" train --train "$out/pairs/train.csv" --validation "$out/pairs/validation.csv" --init "$model" \
        --evaluate-every 0 --seed "$seed" --output "$run" "${train_flags[@]}" |
        grep -E "^(fine-tuning|plan|trained|training a)"
    echo "== seed $seed, sentence-transformers: fine-tuning $model on the same queries with the same settings"
    PYTHONPATH="$peers" python3 "$root/benchmarks/peer/finetune_peer.py" --run "$run" --train "$out/pairs/train.csv" \
        --output "$peer" --threads "$threads" >"$peer.json" 2>"$out/peer-$seed.log" ||
        { tail -5 "$out/peer-$seed.log" >&2; exit 1; }
    cat "$peer.json"
    echo "== seed $seed, both scored by nce on validation.csv"
    "$nce" train eval --output "$out/compare-$seed" --checkpoint "$run/model.safetensors" --versus "$peer"
done
if [[ ${#seeds[@]} -ge 2 ]]; then
    echo "== the training noise: nce seed ${seeds[0]} against nce seed ${seeds[1]}"
    "$nce" train eval --output "$out/noise" --checkpoint "$out/nce-${seeds[0]}/model.safetensors" \
        --versus "$out/nce-${seeds[1]}/model.safetensors" | tail -1
fi
/usr/bin/python3 - "$out" "${seeds[@]}" <<'PY'
import json, os, statistics, sys
out, seeds = sys.argv[1], sys.argv[2:]
differences, nce_steps, peer_steps = [], [], []
for seed in seeds:
    training = json.load(open(os.path.join(out, f"nce-{seed}", "results.json")))["training"]
    peer = json.load(open(os.path.join(out, f"sentence-transformers-{seed}.json")))
    test = json.load(open(os.path.join(out, f"compare-{seed}", "results.json")))["versus"]["test"]
    differences.append(test["difference"])
    nce_steps.append(training["seconds"] / training["steps"])
    peer_steps.append(peer["seconds_per_step"])
    print(f"seed {seed}: nce minus sentence-transformers {test['difference']:+.4f} "
          f"[{test['low']:+.4f}, {test['high']:+.4f}] p={test['p_value']:.3f}")
if len(seeds) >= 2:
    noise = json.load(open(os.path.join(out, "noise", "results.json")))["versus"]["test"]
    print(f"mean over {len(seeds)} seeds: {statistics.mean(differences):+.4f} (seed to seed sd "
          f"{statistics.stdev(differences):.4f}); nce seed {seeds[0]} minus nce seed {seeds[1]}: "
          f"{noise['difference']:+.4f} [{noise['low']:+.4f}, {noise['high']:+.4f}] p={noise['p_value']:.3f}")
nce_step, peer_step = statistics.mean(nce_steps), statistics.mean(peer_steps)
print(f"seconds per training step: nce {nce_step:.2f}, sentence-transformers {peer_step:.2f} "
      f"(torch {peer['torch']}); nce / sentence-transformers = {nce_step / peer_step:.2f}")
PY
echo "== everything is in $out"
