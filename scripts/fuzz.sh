#!/usr/bin/env bash
# Fuzzes one reader of untrusted bytes with libFuzzer (fuzz/README.md), under address and
# undefined-behaviour sanitizers, for MINUTES minutes, with the issue's limits: 2 GiB of
# memory and 5 s per input. Configures build-fuzz/ with Debian's clang the first time.
# Inputs that fail land in fuzz/regressions/TARGET/ (meson test replays them from then on);
# new coverage accumulates in build-fuzz/corpus/TARGET (seeded from fuzz/corpus/TARGET).
# A line with the totals goes to fuzz/runs.log.
# Usage: bash scripts/fuzz.sh TARGET MINUTES      TARGET: a folder name in fuzz/corpus/
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"

targets="$(ls fuzz/corpus | tr '\n' ' ')"
if [[ $# -ne 2 || ! -d "fuzz/corpus/${1:-}" || ! "$2" =~ ^[0-9]+$ || "$2" -lt 1 ]]; then
    echo "usage: bash scripts/fuzz.sh TARGET MINUTES (TARGET one of: $targets)" >&2
    exit 2
fi
target="$1"
minutes="$2"
command -v clang++ >/dev/null || { echo "fuzz: clang++ not found; install Debian's clang (apt-get install clang)" >&2; exit 1; }

if [[ ! -f build-fuzz/build.ninja ]]; then
    # Every library instrumented for coverage (fuzzer-no-link) and sanitized; only the
    # targets link libFuzzer itself.
    CC=clang CXX=clang++ meson setup build-fuzz -Dfuzz=true -Db_sanitize=address,undefined -Db_lundef=false \
        -Dcpp_args=-fsanitize=fuzzer-no-link -Dtests=disabled -Dbenchmarks=false -Dmpi=disabled -Dcuda=disabled
fi
ninja -C build-fuzz "fuzz/${target}_fuzzer"

work_corpus="build-fuzz/corpus/$target"
mkdir -p "$work_corpus" "fuzz/regressions/$target"
log="build-fuzz/fuzz-$target.log"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
# The header and text targets' slow classes (an 80,000-entry safetensors header, 600,000
# characters a tokenizer does not know) need inputs far past libFuzzer's default -max_len.
case "$target" in
    safetensors | npy | tokenizer_text) max_len=(-max_len=4194304) ;;
    *) max_len=() ;;
esac
started=$(date +%s)
set +e
"build-fuzz/fuzz/${target}_fuzzer" "$work_corpus" "fuzz/corpus/$target" "${max_len[@]}" \
    -max_total_time=$((minutes * 60)) -rss_limit_mb=2048 -malloc_limit_mb=2048 -timeout=5 \
    -artifact_prefix="fuzz/regressions/$target/" -print_final_stats=1 >"$log" 2>&1
status=$?
set -e
ran_minutes=$(( ($(date +%s) - started + 30) / 60 ))  # the run stops at its first finding
runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
seconds=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
result=$([[ $status -eq 0 ]] && echo "no finding" || echo "FINDING (exit $status; see $log and fuzz/regressions/$target/)")
line="$(date -u +%Y-%m-%dT%H:%MZ) $target ${ran_minutes} min, $runs inputs ($seconds/s), corpus $(ls "$work_corpus" | wc -l) files: $result"
echo "$line" | tee -a fuzz/runs.log
exit $status
