#!/usr/bin/env bash
# Tests of --device on `nce bench loss`, `nce bench step`, `nce encode` and the retrieval apps'
# train / eval: a name other than cpu or cuda is refused naming the two; where this machine
# or this build has no CUDA backend, --device cuda is one line "nce: error: --device cuda:
# <why>; run with --device cpu", a non-zero exit, nothing on stdout and nothing written.
# On a machine whose GPU the CUDA build can use, the bench commands and a tiny retrieval run
# (train, eval, index) run there instead (never run so far: no GPU was lent to this work).
# Usage: bash tests/device_cli_test.sh PATH/TO/nce      (meson test runs it as the suite 'device-cli')
set -uo pipefail

if [[ $# -ne 1 || ! -x "$1" ]]; then
    echo "usage: bash tests/device_cli_test.sh PATH/TO/nce (got: $*)" >&2
    exit 2
fi
nce="$1"
model="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/fixtures/torch_reference/sig_predictor.safetensors"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
stdout="$scratch/stdout"
stderr="$scratch/stderr"
failures=0
source "$(dirname "${BASH_SOURCE[0]}")/cli_test_helpers.sh"

# expect_silent_stdout WHAT: the command printed nothing on stdout.
expect_silent_stdout() {
    if [[ ! -s "$stdout" ]]; then pass "$1 prints nothing on stdout"; else fail "$1 printed on stdout"; fi
}

# 1. Names other than cpu and cuda.
run bench loss infonce --n 8 --d 4 --reps 1 --device tpu
expect_one_line_error "--device must be cpu or cuda, got 'tpu'" "" "bench loss --device tpu"
run bench step --batch 2 --seq 2 --reps 1 --device tpu
expect_one_line_error "--device must be cpu or cuda, got 'tpu'" "" "bench step --device tpu"
run encode --model "$model" --features "$scratch/x.npy" --out "$scratch/tpu.npy" --device tpu
expect_one_line_error "--device must be cpu or cuda, got 'tpu'" "$scratch/tpu.npy" "encode --device tpu"
run korquad train --device tpu --output "$scratch/tpu_run"
expect_one_line_error "device must be cpu or cuda, got 'tpu' \(flag --device\)" "$scratch/tpu_run" \
    "korquad train --device tpu"

# 2. --device cpu is the default and is accepted by name; the JSON line says which device.
run bench loss infonce --n 8 --d 4 --reps 1 --device cpu
expect_exit_zero "bench loss --device cpu"
expect_in "$stdout" '"device":"cpu"' "bench loss's line says \"device\":\"cpu\""

# 3. --device cuda.
run bench loss infonce --n 8 --d 4 --reps 1 --warmup 0 --device cuda
if [[ $status -eq 0 ]]; then
    echo "note: a CUDA GPU is usable here: checking the runs on it instead of the one-line refusal"
    expect_in "$stdout" '"device":"cuda"' "bench loss --device cuda runs on the GPU"
    run bench step --model text_encoder --batch 4 --seq 4 --reps 1 --warmup 0 --device cuda
    expect_exit_zero "bench step --device cuda"
    cat >"$scratch/tiny.json" <<'JSON'
{"vocab_size": 400, "d_model": 32, "pretrain_steps": 2, "pretrain_batch_size": 8, "nhead": 2, "num_layers": 1,
 "dim_feedforward": 64, "max_query_length": 24, "max_passage_length": 40, "batch_size": 16, "max_steps": 4,
 "warmup_steps": 1, "evaluate_every": 2, "candidate_depth": 20, "app": {"articles": 12}}
JSON
    run korquad train --device cuda --config "$scratch/tiny.json" --output "$scratch/cuda_run"
    expect_exit_zero "korquad train --device cuda (tiny)"
    run korquad eval --device cuda --output "$scratch/cuda_run"
    expect_exit_zero "korquad eval --device cuda"
    run korquad index --device cuda --output "$scratch/cuda_run"
    expect_exit_zero "korquad index --device cuda"
else
    # The reason is backend_for's: "no cuda device: ..." (a CUDA build on a machine without a
    # GPU) or "no cuda backend in this build: ..." (a build without the CUDA toolkit).
    refusal='--device cuda: no cuda (device|backend in this build): .*; run with --device cpu$'
    expect_one_line_error "$refusal" "" "bench loss infonce --device cuda"
    expect_silent_stdout "bench loss infonce --device cuda"
    reason=$(sed -e 's/^nce: error: --device cuda: //' -e 's/; run with --device cpu$//' "$stderr")
    run bench step --device cuda
    expect_one_line_error "$refusal" "" "bench step --device cuda"
    expect_silent_stdout "bench step --device cuda"
    run bench loss cosent --n 8 --d 4 --device cuda
    expect_one_line_error "$refusal" "" "bench loss cosent --device cuda"
    run encode --model "$model" --features "$scratch/x.npy" --out "$scratch/e.npy" --device cuda
    expect_one_line_error "$refusal" "$scratch/e.npy" "encode --device cuda"
    expect_silent_stdout "encode --device cuda"
    for app in "korquad train" "korquad eval" "korquad pretrain" "train"; do
        run $app --device cuda --output "$scratch/run"
        expect_one_line_error "$refusal" "$scratch/run" "$app --device cuda --output DIR"
        expect_silent_stdout "$app --device cuda"
    done
    # Every command gives the same reason, backend_for's.
    if grep -qF -- "$reason" "$stderr"; then pass "the retrieval apps give bench loss's reason"
    else fail "the reason differs from bench loss's ('$reason')"; fi
    # The device is checked before the data: a missing --data file is not what stops it.
    run korquad train --device cuda --data "$scratch/missing.json" --output "$scratch/run"
    expect_one_line_error "$refusal" "$scratch/run" "korquad train --device cuda --data MISSING"
fi

if [[ $failures -ne 0 ]]; then
    echo "$failures check(s) failed"
    exit 1
fi
echo "all device command-line checks passed"
