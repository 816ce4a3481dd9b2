#!/usr/bin/env bash
# `nce` under `mpirun -np 2`: rank 0 alone prints and writes, training on two processes
# takes the steps one process takes, and a failing command ends every process.
# Usage: bash tests/distributed_cli_test.sh PATH/TO/nce PATH/TO/test_distributed
#        (meson test: suite 'distributed-cli'; test_distributed only answers whether MPI is built in)
# Exit 77 (meson's "skipped") with a message when MPI was not built in or mpirun is absent.
set -uo pipefail

if [[ $# -ne 2 || ! -x "$1" || ! -x "$2" ]]; then
    echo "usage: bash tests/distributed_cli_test.sh PATH/TO/nce PATH/TO/test_distributed (got: $*)" >&2
    exit 2
fi
nce="$1"
if [[ "$("$2" --mpi-compiled-in)" != yes ]]; then
    echo "SKIP: nce was built without MPI (install libopenmpi-dev and openmpi-bin, then reconfigure with -Dmpi=enabled)"
    exit 77
fi
if ! command -v mpirun >/dev/null 2>&1; then
    echo "SKIP: mpirun not found (install openmpi-bin)"
    exit 77
fi

# As in tests/distributed_test.sh: root allowed, one thread per process, plain shared-memory
# copies, no leak checking of OpenMPI's own allocations under the sanitizer build.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export NCE_NUM_THREADS=1 OMP_NUM_THREADS=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
mpirun_two=(timeout 240 mpirun --oversubscribe --bind-to none -np 2)
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
failures=0
pass() { echo "ok:   $*"; }
fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}

# 1. nce bench step on two processes: one JSON line (rank 0's), naming 2 processes and the bytes.
"${mpirun_two[@]}" "$nce" bench step --model text_encoder --batch 8 --seq 8 --reps 1 >"$scratch/out" 2>"$scratch/err"
status=$?
lines=$(grep -c '"bench":"step"' "$scratch/out")
if [[ $status -eq 0 && $lines -eq 1 ]] && grep -q '"processes":2' "$scratch/out" &&
    grep -Eq '"bytes_per_step":[1-9]' "$scratch/out"; then
    pass "bench step on 2 processes prints one line with processes 2 and the bytes per step"
else
    fail "bench step on 2 processes: exit $status, $lines lines: $(cat "$scratch/out" "$scratch/err" | head -c 2000)"
fi

# 2. nce korquad train, one process and two, dropout 0 and the same thread count per process:
#    every step's loss agrees (float32), rank 0 alone writes the run's folder, the other
#    rank's scratch folder is gone.
echo '{"app": {"articles": 20}}' >"$scratch/config.json"
train=(korquad train --config "$scratch/config.json" --max-steps 4 --warmup-steps 1 --evaluate-every 2
    --batch-size 16 --vocab-size 500 --d-model 32 --dim-feedforward 64 --dropout 0)
timeout 240 "$nce" "${train[@]}" --output "$scratch/one" >"$scratch/one.out" 2>&1
status_one=$?
mkdir -p "$scratch/tmp"
TMPDIR="$scratch/tmp" "${mpirun_two[@]}" "$nce" "${train[@]}" --output "$scratch/two" >"$scratch/two.out" 2>&1
status_two=$?
losses() { grep '"event":"step"' "$1" | grep -o '"loss":[-0-9.e+]*' | cut -d: -f2; }
if [[ $status_one -ne 0 || $status_two -ne 0 ]]; then
    fail "korquad train: exit $status_one (one process), $status_two (two): $(tail -c 1500 "$scratch/two.out")"
else
    paste <(losses "$scratch/one/train_log.jsonl") <(losses "$scratch/two/train_log.jsonl") >"$scratch/losses"
    steps=$(wc -l <"$scratch/losses")
    if [[ $steps -eq 4 ]] && awk '{ d = $1 - $2; if (d < 0) d = -d; if (d > 1e-5 * ($1 < 0 ? -$1 : $1) + 1e-6) bad = 1 }
                                    END { exit bad }' "$scratch/losses"; then
        pass "korquad train: the 4 steps' losses on 2 processes equal one process's ($(paste -sd' ' "$scratch/losses"))"
    else
        fail "korquad train: losses differ (one process, two): $(paste -sd' ' "$scratch/losses")"
    fi
    if compgen -G "$scratch/tmp/nce-rank-*" >/dev/null; then
        fail "korquad train on 2 processes left rank 1's scratch folder behind: $(ls "$scratch/tmp")"
    else
        pass "korquad train on 2 processes: rank 1's scratch folder is gone"
    fi
    if [[ $(grep -c "^trained 4 steps" "$scratch/two.out") -eq 1 ]]; then
        pass "korquad train on 2 processes prints its report once"
    else
        fail "korquad train on 2 processes: the report is not printed exactly once: $(head -c 1500 "$scratch/two.out")"
    fi
fi

# 2b. nce train on pairs with a negative column, one process and two: the negatives of the
#     whole batch are sliced over the processes and gathered after the positives, so every
#     step's loss agrees with one process's.
/usr/bin/python3 - "$scratch/pairs.jsonl" <<'PY'
import json, random, sys
rng = random.Random(5)
words = ["amber", "basil", "cedar", "delta", "ember", "fjord", "grove", "haven", "ivory", "jolly"]
topics = [f"{a} {b}" for a in words for b in words if a != b][:48]
with open(sys.argv[1], "w") as out:
    for topic in topics:
        other = rng.choice([t for t in topics if t != topic])
        out.write(json.dumps({"anchor": f"what is the {topic}", "positive": f"the {topic} is a place by the sea",
                              "negative": f"the {other} is a place by the sea"}) + "\n")
PY
pairs=(train --train "$scratch/pairs.jsonl" --max-steps 3 --warmup-steps 1 --evaluate-every 0 --no-pretrain
    --batch-size 8 --vocab-size 128 --d-model 32 --nhead 2 --dim-feedforward 64 --num-layers 1 --dropout 0)
timeout 240 "$nce" "${pairs[@]}" --output "$scratch/pairs_one" >"$scratch/pairs_one.out" 2>&1
status_one=$?
"${mpirun_two[@]}" "$nce" "${pairs[@]}" --output "$scratch/pairs_two" >"$scratch/pairs_two.out" 2>&1
status_two=$?
if [[ $status_one -ne 0 || $status_two -ne 0 ]]; then
    fail "train with negatives: exit $status_one (one process), $status_two (two): $(tail -c 1500 "$scratch/pairs_two.out")"
else
    paste <(losses "$scratch/pairs_one/train_log.jsonl") <(losses "$scratch/pairs_two/train_log.jsonl") \
        >"$scratch/pairs_losses"
    steps=$(wc -l <"$scratch/pairs_losses")
    if [[ $steps -eq 3 ]] && awk '{ d = $1 - $2; if (d < 0) d = -d; if (d > 1e-5 * ($1 < 0 ? -$1 : $1) + 1e-6) bad = 1 }
                                    END { exit bad }' "$scratch/pairs_losses"; then
        pass "train with negatives: the 3 steps' losses on 2 processes equal one process's ($(paste -sd' ' "$scratch/pairs_losses"))"
    else
        fail "train with negatives: losses differ (one process, two): $(paste -sd' ' "$scratch/pairs_losses")"
    fi
fi

# 3. A failing command on two processes ends both, with the message, and a non-zero exit.
"${mpirun_two[@]}" "$nce" loss infonce --inputs "$scratch/no-such-folder" --out "$scratch/out-folder" \
    >"$scratch/out" 2>&1
status=$?
if [[ $status -ne 0 && $status -ne 124 ]] && grep -q "nce: error: rank [01] of 2: .*no-such-folder" "$scratch/out"; then
    pass "a failing command on 2 processes exits $status with the message"
else
    fail "a failing command on 2 processes: exit $status: $(head -c 1500 "$scratch/out")"
fi

if [[ $failures -ne 0 ]]; then
    echo "$failures distributed CLI check(s) failed"
    exit 1
fi
echo "all distributed CLI checks passed"
