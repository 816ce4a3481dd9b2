#!/usr/bin/env bash
# Tests of `nce bench step` on tiny shapes (no timing is checked: speed lives in benchmarks/):
# one JSON line with every field the driver reads, the same loss from two runs (fixed seeds),
# --checkpoint-activations giving the same loss with a lower peak of allocated memory, and
# errors naming the bad argument.
# Usage: bash tests/bench_step_cli_test.sh PATH/TO/nce     (meson test runs it as 'bench-step-cli')
set -uo pipefail

if [[ $# -ne 1 || ! -x "$1" ]]; then
    echo "usage: bash tests/bench_step_cli_test.sh PATH/TO/nce (got: $*)" >&2
    exit 2
fi
nce="$1"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
failures=0

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok:   $*"; }

# field NAME FILE: the raw value of "NAME": in the JSON line (numbers and strings as written).
field() { grep -o "\"$1\":[^,}]*" "$2" | head -n 1 | cut -d: -f2-; }

source "$(dirname "${BASH_SOURCE[0]}")/bfloat16_here.sh"
bfloat16_here=1
bfloat16_gemm_here "$nce" || bfloat16_here=0

for model in text_encoder sig_predictor; do
    out="$scratch/$model.json"
    NCE_NUM_THREADS=2 "$nce" bench step --model "$model" --batch 3 --seq 4 --reps 2 >"$out" 2>"$scratch/err"
    status=$?
    if [[ $status -ne 0 ]]; then fail "$model: exit $status: $(head -c 500 "$scratch/err")"; continue; fi
    if [[ $(wc -l <"$out") -eq 1 ]]; then pass "$model: one line"; else fail "$model: $(wc -l <"$out") lines"; fi
    missing=""
    for name in bench side name model batch seq dtype threads reps median_ms min_ms samples_per_s \
                checkpoint_activations peak_allocated_mib peak_rss_mib blas_core gemm_precision cpu_ms last_loss; do
        [[ -n "$(field "$name" "$out")" ]] || missing="$missing $name"
    done
    if [[ -z "$missing" ]]; then pass "$model: every field"; else fail "$model: missing fields:$missing"; fi
    [[ "$(field bench "$out")" == '"step"' && "$(field side "$out")" == '"nce"' && "$(field batch "$out")" == 3 &&
       "$(field seq "$out")" == 4 && "$(field threads "$out")" == 2 && "$(field reps "$out")" == 2 ]] &&
        pass "$model: bench, side, batch, seq, threads and reps as asked" || fail "$model: $(cat "$out")"
    # Fixed seeds: a second run takes the same steps and ends at the same loss.
    NCE_NUM_THREADS=2 "$nce" bench step --model "$model" --batch 3 --seq 4 --reps 2 >"$scratch/again.json" 2>/dev/null
    if [[ "$(field last_loss "$out")" == "$(field last_loss "$scratch/again.json")" ]]; then
        pass "$model: the same loss from a second run"
    else
        fail "$model: loss $(field last_loss "$out") then $(field last_loss "$scratch/again.json")"
    fi
    if [[ $bfloat16_here -eq 1 ]]; then
        # --gemm-precision bfloat16: the same steps with bfloat16-rounded GEMM operands end near
        # the float32 loss (within 5%), not on it.
        NCE_NUM_THREADS=2 "$nce" bench step --model "$model" --batch 3 --seq 4 --reps 2 --gemm-precision bfloat16 \
            >"$scratch/bf16.json" 2>"$scratch/err"
        if [[ "$(field gemm_precision "$out")" == '"float32"' && "$(field gemm_precision "$scratch/bf16.json")" == '"bfloat16"' ]] &&
            awk -v a="$(field last_loss "$out")" -v b="$(field last_loss "$scratch/bf16.json")" \
                'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d > 0 && d <= 0.05 * (a < 0 ? -a : a)) }'; then
            pass "$model: --gemm-precision bfloat16 loss $(field last_loss "$scratch/bf16.json"), float32 $(field last_loss "$out")"
        else
            fail "$model: --gemm-precision bfloat16: $(cat "$scratch/bf16.json" "$scratch/err")"
        fi
    fi
done

# --checkpoint-activations: the same loss bit for bit (JSON writes the shortest exact double),
# and a lower peak of the allocator's bytes in use. At B 32, T 64 the text encoder's two layers
# keep about 34 MiB of activations without it (peaks 81 and 47 MiB); the peak is counted by
# the allocator, so it is the same on every run, and a quarter less is a safe line to check.
for mode in stored checkpointed; do
    flag=""
    [[ $mode == checkpointed ]] && flag="--checkpoint-activations"
    NCE_NUM_THREADS=2 "$nce" bench step --model text_encoder --batch 32 --seq 64 --reps 1 $flag \
        >"$scratch/$mode.json" 2>"$scratch/err" || fail "$mode: exit $?: $(head -c 500 "$scratch/err")"
done
if [[ "$(field checkpoint_activations "$scratch/stored.json")" == false &&
      "$(field checkpoint_activations "$scratch/checkpointed.json")" == true ]]; then
    pass "checkpoint_activations reports the flag"
else
    fail "checkpoint_activations: $(field checkpoint_activations "$scratch/stored.json") then $(field checkpoint_activations "$scratch/checkpointed.json")"
fi
stored_loss="$(field last_loss "$scratch/stored.json")"
checkpointed_loss="$(field last_loss "$scratch/checkpointed.json")"
if [[ -n "$stored_loss" && "$stored_loss" == "$checkpointed_loss" ]]; then
    pass "--checkpoint-activations: the same loss ($stored_loss)"
else
    fail "--checkpoint-activations: loss $stored_loss stored, $checkpointed_loss checkpointed"
fi
stored_peak="$(field peak_allocated_mib "$scratch/stored.json")"
checkpointed_peak="$(field peak_allocated_mib "$scratch/checkpointed.json")"
if awk -v s="$stored_peak" -v c="$checkpointed_peak" 'BEGIN { exit !(s > 0 && c > 0 && c < 0.75 * s) }'; then
    pass "--checkpoint-activations: peak allocated $checkpointed_peak MiB against $stored_peak MiB stored"
else
    fail "--checkpoint-activations: peak allocated $checkpointed_peak MiB, not a quarter below $stored_peak MiB stored"
fi

# expect_error MESSAGE ARGS...: exit non-zero, nothing on stdout, and stderr's first line
# names the fault (CLI11's parse errors add a second line pointing to --help).
expect_error() {
    local message="$1"
    shift
    "$nce" bench step "$@" >"$scratch/out" 2>"$scratch/err"
    local status=$?
    if [[ $status -ne 0 && ! -s "$scratch/out" ]] && head -n 1 "$scratch/err" | grep -q -- "$message"; then
        pass "bench step $*: error naming the fault"
    else
        fail "bench step $*: exit $status, stdout '$(head -c 200 "$scratch/out")', stderr '$(head -c 300 "$scratch/err")'"
    fi
}
expect_error "--model" --model resnet
expect_error "use float32 or bfloat16" --model text_encoder --gemm-precision half
expect_error "at least 2 rows" --model text_encoder --batch 1
expect_error "--reps" --model text_encoder --reps 0
expect_error "--batch" --model text_encoder --batch 2305843009213693952  # batch x seq would wrap

echo "$failures failed"
[[ $failures -eq 0 ]]
