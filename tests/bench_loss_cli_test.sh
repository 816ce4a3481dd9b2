#!/usr/bin/env bash
# Tests of `nce bench loss` on tiny shapes (no timing is checked: speed lives in benchmarks/):
# one JSON line with every field the driver reads, the same loss from two runs and from
# two block sizes, and one-line errors for bad arguments.
# Usage: bash tests/bench_loss_cli_test.sh PATH/TO/nce     (meson test runs it as 'bench-loss-cli')
set -uo pipefail

if [[ $# -ne 1 || ! -x "$1" ]]; then
    echo "usage: bash tests/bench_loss_cli_test.sh PATH/TO/nce (got: $*)" >&2
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

for name in infonce infonce_symmetric; do
    out="$scratch/$name.json"
    NCE_NUM_THREADS=2 "$nce" bench loss "$name" --n 37 --d 8 --neg 5 --reps 2 >"$out" 2>"$scratch/err"
    status=$?
    if [[ $status -ne 0 ]]; then fail "$name: exit $status: $(head -c 500 "$scratch/err")"; continue; fi
    if [[ $(wc -l <"$out") -eq 1 ]]; then pass "$name: one line"; else fail "$name: $(wc -l <"$out") lines"; fi
    missing=""
    for key in bench side name n d neg dtype threads reps median_ms min_ms cpu_ms gemm_gflop_per_s block_rows \
               peak_rss_mib blas_core loss; do
        [[ -n "$(field "$key" "$out")" ]] || missing="$missing $key"
    done
    if [[ -z "$missing" ]]; then pass "$name: every field"; else fail "$name: missing fields:$missing"; fi
    [[ "$(field bench "$out")" == '"loss"' && "$(field side "$out")" == '"nce"' && "$(field n "$out")" == 37 &&
       "$(field d "$out")" == 8 && "$(field threads "$out")" == 2 && "$(field reps "$out")" == 2 ]] &&
        pass "$name: bench, side, n, d, threads and reps as asked" || fail "$name: $(cat "$out")"
    # Fixed seed: a second run gives the same loss; blocks of 4 rows give it too (to float32's rounding).
    NCE_NUM_THREADS=2 "$nce" bench loss "$name" --n 37 --d 8 --neg 5 --reps 1 >"$scratch/again.json" 2>/dev/null
    [[ "$(field loss "$out")" == "$(field loss "$scratch/again.json")" ]] && pass "$name: same loss twice" ||
        fail "$name: loss $(field loss "$out") then $(field loss "$scratch/again.json")"
    NCE_NUM_THREADS=2 "$nce" bench loss "$name" --n 37 --d 8 --neg 5 --reps 1 --block-rows 4 >"$scratch/blocked.json" 2>/dev/null
    if awk -v a="$(field loss "$out")" -v b="$(field loss "$scratch/blocked.json")" \
        'BEGIN { d = a - b; if (d < 0) d = -d; exit !(b != "" && d <= 1e-6 * (a < 0 ? -a : a)) }'; then
        pass "$name: --block-rows 4 gives the same loss"
    else
        fail "$name: loss $(field loss "$out") unblocked, $(field loss "$scratch/blocked.json") in blocks of 4"
    fi
done

# Another loss of the catalogue runs on its example problem.
if NCE_NUM_THREADS=2 "$nce" bench loss triplet --n 16 --d 8 --reps 1 >"$scratch/triplet.json" 2>"$scratch/err" &&
    [[ "$(field name "$scratch/triplet.json")" == '"triplet"' ]]; then
    pass "triplet: one line"
else
    fail "triplet: $(cat "$scratch/err" "$scratch/triplet.json")"
fi

source "$(dirname "${BASH_SOURCE[0]}")/bfloat16_here.sh"
if bfloat16_gemm_here "$nce"; then
    # --gemm-precision: the line says which ran; bfloat16 moves the loss by about bfloat16's rounding
    # of the logits (2^-8 relative), float32 leaves it as the default run has it.
    NCE_NUM_THREADS=2 "$nce" bench loss infonce --n 37 --d 8 --neg 5 --reps 1 --gemm-precision float32 >"$scratch/f32.json" 2>/dev/null
    NCE_NUM_THREADS=2 "$nce" bench loss infonce --n 37 --d 8 --neg 5 --reps 1 --gemm-precision bfloat16 >"$scratch/bf16.json" 2>"$scratch/err"
    if [[ "$(field gemm_precision "$scratch/f32.json")" == '"float32"' && "$(field gemm_precision "$scratch/bf16.json")" == '"bfloat16"' &&
          -n "$(field onednn_isa "$scratch/bf16.json")" && "$(field loss "$scratch/f32.json")" == "$(field loss "$scratch/infonce.json")" ]] &&
        awk -v a="$(field loss "$scratch/f32.json")" -v b="$(field loss "$scratch/bf16.json")" \
            'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d > 0 && d <= 0.02 * a) }'; then
        pass "--gemm-precision: float32 loss $(field loss "$scratch/f32.json"), bfloat16 $(field loss "$scratch/bf16.json") on $(field onednn_isa "$scratch/bf16.json")"
    else
        fail "--gemm-precision: $(cat "$scratch/f32.json" "$scratch/bf16.json" "$scratch/err")"
    fi
fi

# expect_error FRAGMENT ARGS...: exit 1 and one line "nce: error: ..." mentioning FRAGMENT.
expect_error() {
    local fragment="$1"
    shift
    "$nce" bench loss "$@" >"$scratch/out" 2>"$scratch/err"
    local status=$?
    if [[ $status -ne 0 && $(wc -l <"$scratch/err") -le 2 ]] && grep -q -- "$fragment" "$scratch/err"; then
        pass "error for $*: $(head -n 1 "$scratch/err")"
    else
        fail "bench loss $*: exit $status, stderr: $(cat "$scratch/err")"
    fi
}
expect_error "unknown loss 'nosuch'" nosuch --n 8 --d 4
expect_error "--dtype must be float32 or float64" infonce --n 8 --d 4 --dtype float16
expect_error "--neg and --block-rows apply to infonce" siglip --n 8 --d 4 --neg 2
expect_error "--n" infonce --n 1 --d 4
expect_error "use float32 or bfloat16" infonce --n 8 --d 4 --gemm-precision float16
expect_error "changes float32 GEMMs only" infonce --n 8 --d 4 --dtype float64 --gemm-precision bfloat16

if [[ $failures -ne 0 ]]; then
    echo "$failures check(s) failed"
    exit 1
fi
echo "all bench loss checks passed"
