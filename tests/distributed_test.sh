#!/usr/bin/env bash
# Runs tests/test_distributed.cpp under `mpirun -np 2` and `-np 3`, then checks that a rank
# that fails ends the whole run (MPI_Abort) instead of leaving the others waiting.
# Usage: bash tests/distributed_test.sh PATH/TO/test_distributed   (meson test: suite 'distributed')
# Exit 77 (meson's "skipped") with a message when MPI was not built in or mpirun is absent.
set -uo pipefail

if [[ $# -ne 1 || ! -x "$1" ]]; then
    echo "usage: bash tests/distributed_test.sh PATH/TO/test_distributed (got: $*)" >&2
    exit 2
fi
test_exe="$1"

if [[ "$("$test_exe" --mpi-compiled-in)" != yes ]]; then
    echo "SKIP: nce was built without MPI (install libopenmpi-dev and openmpi-bin, then reconfigure with -Dmpi=enabled)"
    exit 77
fi
if ! command -v mpirun >/dev/null 2>&1; then
    echo "SKIP: mpirun not found (install openmpi-bin)"
    exit 77
fi

# OpenMPI refuses to run as root unless told it may; --oversubscribe lets 3 ranks share 2 cores.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export NCE_NUM_THREADS=1 OMP_NUM_THREADS=1
# Containers often forbid the cross-memory attach OpenMPI uses for large shared-memory
# messages; plain copies work everywhere.
export OMPI_MCA_btl_vader_single_copy_mechanism=none
# Under the sanitizer build (.ci/run): OpenMPI unloads its components before LeakSanitizer
# looks, so their never-freed allocations show as leaks of "<unknown module>" that no
# suppression can name. Leak checking is off for these runs; every other check stays on.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
mpirun_args=(--oversubscribe --bind-to none)
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
failures=0

for ranks in 2 3; do
    echo "== mpirun -np $ranks test_distributed"
    timeout 180 mpirun "${mpirun_args[@]}" -np "$ranks" "$test_exe" --no-colors=true >"$scratch/out" 2>&1
    status=$?
    if [[ $status -eq 0 ]]; then
        tail -n 3 "$scratch/out"
        echo "ok:   $ranks processes"
    else
        cat "$scratch/out"
        echo "FAIL: $ranks processes (exit $status$([[ $status -eq 124 ]] && echo ': hung, killed after 180 s'))"
        failures=$((failures + 1))
    fi
done

# A rank that throws (caught and handed to abort_world, as `nce` does; or uncaught, through
# the terminate handler) while the other waits in a collective: the run must end, non-zero,
# with the message, well before the timeout.
for flag in --throw-on-rank=1 --throw-uncaught-on-rank=1; do
    echo "== mpirun -np 2 test_distributed $flag"
    timeout 60 mpirun "${mpirun_args[@]}" -np 2 "$test_exe" "$flag" >"$scratch/out" 2>&1
    status=$?
    if [[ $status -eq 124 ]]; then
        echo "FAIL: $flag: the run hung (killed after 60 s)"
        failures=$((failures + 1))
    elif [[ $status -eq 0 ]]; then
        echo "FAIL: $flag: the run exited 0"
        failures=$((failures + 1))
    elif ! grep -q "nce: error: rank 1 of 2: deliberate failure on rank 1" "$scratch/out"; then
        cat "$scratch/out"
        echo "FAIL: $flag: the message naming rank 1 is missing"
        failures=$((failures + 1))
    else
        echo "ok:   $flag ends the run (exit $status) with the message"
    fi
done

if [[ $failures -ne 0 ]]; then
    echo "$failures distributed check(s) failed"
    exit 1
fi
echo "all distributed checks passed"
