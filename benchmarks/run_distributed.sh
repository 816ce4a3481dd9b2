#!/usr/bin/env bash
# Runs BUILD_DIR/benchmarks/distributed_benchmark with 1 process of 2 threads and 2
# processes of 1 thread each (the machine's 2 cores either way), the same global batch.
# Usage: bash benchmarks/run_distributed.sh [BUILD_DIR] [benchmark options, e.g. --batch 256 --steps 5]
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"

build_dir="build"
if [[ $# -gt 0 && "$1" != --* ]]; then
    build_dir="$1"
    shift
fi
benchmark="$build_dir/benchmarks/distributed_benchmark"
if [[ ! -x "$benchmark" ]]; then
    echo "run_distributed: $benchmark not found; build it with: ninja -C $build_dir benchmarks/distributed_benchmark" >&2
    exit 1
fi
if ! command -v mpirun >/dev/null 2>&1; then
    echo "run_distributed: mpirun not found (install openmpi-bin)" >&2
    exit 1
fi
# OpenMPI refuses to run as root unless told it may.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

echo "run_distributed: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo
NCE_NUM_THREADS=2 mpirun --bind-to none -np 1 "$benchmark" "$@"
echo
NCE_NUM_THREADS=1 mpirun --oversubscribe --bind-to none -np 2 "$benchmark" "$@"
