#!/usr/bin/env bash
# Runs build/benchmarks/gemm_benchmark under two OpenBLAS settings, one after the other:
#   1. OPENBLAS_CORETYPE as the environment sets it; when it is unset, forced to Haswell
#      (the value some environments set), to show what that setting costs;
#   2. env -u OPENBLAS_CORETYPE: OpenBLAS picks the kernels for this CPU itself.
# Usage: bash benchmarks/run_gemm.sh [BUILD_DIR] [--repeats N]     (BUILD_DIR default: build)
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"

build_dir="build"
if [[ $# -gt 0 && "$1" != --* ]]; then
    build_dir="$1"
    shift
fi
benchmark="$build_dir/benchmarks/gemm_benchmark"
if [[ ! -x "$benchmark" ]]; then
    echo "run_gemm: $benchmark not found; build it with: ninja -C $build_dir benchmarks/gemm_benchmark" >&2
    exit 1
fi

echo "run_gemm: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo
if [[ -n "${OPENBLAS_CORETYPE:-}" ]]; then
    echo "=== 1. as the environment sets it: OPENBLAS_CORETYPE=$OPENBLAS_CORETYPE ==="
    "$benchmark" "$@"
else
    echo "=== 1. OPENBLAS_CORETYPE is unset here; forcing OPENBLAS_CORETYPE=Haswell ==="
    OPENBLAS_CORETYPE=Haswell "$benchmark" "$@"
fi
echo
echo "=== 2. env -u OPENBLAS_CORETYPE (OpenBLAS detects the core) ==="
env -u OPENBLAS_CORETYPE "$benchmark" "$@"
