#!/usr/bin/env bash
# nce's checks on a machine with an NVIDIA GPU, in one go (about 5 minutes): the CUDA parity
# suite on the real GPU, nce against PyTorch eager on the same GPU, the blocked InfoNCE at
# N 65,536, and NCE_CUDA_PROFILE's counts and per-kernel times for the loss and two steps. Made for a lent GPU machine that has the CUDA toolkit and
# PyTorch but none of Debian's -dev packages: it runs the binaries of a bundle made here by
# benchmarks/gpu/make_bundle.sh.
#
#     bash benchmarks/gpu/run_checks.sh [.device/bundle.tar.xz] [out-dir]
#
# Writes machine.txt, parity.log, gpu_bench.jsonl, infonce_65536.jsonl and profile_*.log into
# out-dir (default: $OUT, else gpu-checks/) and prints a summary last.
set -uo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo_root"
bundle="${1:-.device/bundle.tar.xz}"
out="${2:-${OUT:-gpu-checks}}"
mkdir -p "$out"
python="${PYTHON:-python3}"
say() { echo "gpu-checks: $*"; }

nce_root=/tmp/nce-gpu
rm -rf "$nce_root" && mkdir -p "$nce_root" && tar -C "$nce_root" -xJf "$bundle" || { say "cannot unpack $bundle"; exit 1; }
# cuBLAS and the CUDA runtime: the machine's own (toolkit first, then PyTorch's wheels).
cuda_libs="$(dirname "$(find /usr/local/cuda*/ /usr/lib /opt -name 'libcublas.so.13*' 2>/dev/null | head -1)")"
export LD_LIBRARY_PATH="$nce_root/lib:$cuda_libs:${LD_LIBRARY_PATH:-}"
nce="$nce_root/apps/nce"

{
    date -u
    nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv
    lscpu | grep -E '^(Model name|CPU\(s\)|Thread|Core|Socket)'
    echo "flags: $(grep -o -w -E 'avx512f|avx512_bf16|amx_bf16|amx_tile' /proc/cpuinfo | sort -u | tr '\n' ' ')"
    echo "cublas from: $cuda_libs"
    "$python" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name())'
    ldd "$nce" | grep -E 'not found|cublas|cudart' || true
} 2>&1 | tee "$out/machine.txt"

say "1. parity suite on the GPU (tests/test_cuda_parity_device)"
NCE_NUM_THREADS=2 timeout 240 "$nce_root/tests/test_cuda_parity_device" 2>&1 | tee "$out/parity.log" | tail -n 15
parity_status=${PIPESTATUS[0]}
say "parity exit status $parity_status"

say "2. nce against PyTorch eager on the same GPU (float32, median of 10 after 3 warm-ups)"
: >"$out/gpu_bench.jsonl"
bench() {  # kind, arguments...: both sides, one JSON line each
    local kind="$1"; shift
    timeout 120 "$nce" bench "$kind" "$@" --device cuda --reps 10 --warmup 3 2>&1 | grep '^{' >>"$out/gpu_bench.jsonl" \
        || echo "{\"side\": \"nce\", \"missing\": \"nce bench $kind $*\"}" >>"$out/gpu_bench.jsonl"
    timeout 120 "$python" "benchmarks/peer/${kind}_peer.py" "$@" --device cuda --reps 10 --warmup 3 2>&1 | grep '^{' >>"$out/gpu_bench.jsonl" \
        || echo "{\"side\": \"torch\", \"missing\": \"${kind}_peer.py $*\"}" >>"$out/gpu_bench.jsonl"
}
for n in 4096 16384; do
    bench loss infonce --n "$n" --d 384
    bench loss infonce_symmetric --n "$n" --d 384
done
bench step --model sig_predictor --batch 64 --seq 64
bench step --model text_encoder --batch 32 --seq 32

say "3. nce alone: infonce N 65536, d 384, in blocks of 2048 rows (device memory held: device_peak_mib)"
timeout 120 "$nce" bench loss infonce --n 65536 --d 384 --block-rows 2048 --device cuda --reps 3 --warmup 1 2>&1 \
    | tee "$out/infonce_65536.jsonl" | tail -n 3
"$python" - "$out/infonce_65536.jsonl" <<'PY' || true
import json, sys
for line in open(sys.argv[1]):
    if line.startswith("{"):
        r = json.loads(line)
        print("infonce N 65536 in blocks of 2048: %.1f ms, device memory held %.0f MiB (bar: 2048)"
              % (r["median_ms"], r.get("device_peak_mib", 0)))
PY

say "4. where the time goes (NCE_CUDA_PROFILE=1: launch, copy and read-back counts, per-kernel times)"
NCE_CUDA_PROFILE=1 timeout 60 "$nce" bench loss infonce --n 4096 --d 384 --device cuda --reps 1 --warmup 1 \
    >"$out/profile_infonce.log" 2>&1
NCE_CUDA_PROFILE=1 timeout 60 "$nce" bench step --model text_encoder --batch 32 --seq 32 --device cuda --reps 1 --warmup 1 \
    >"$out/profile_text_encoder.log" 2>&1
NCE_CUDA_PROFILE=1 timeout 60 "$nce" bench step --model sig_predictor --batch 64 --seq 64 --device cuda --reps 1 --warmup 1 \
    >"$out/profile_sig_predictor.log" 2>&1
for f in "$out"/profile_*.log; do echo "== $f"; grep 'cuda profile' "$f" | head -n 14; done

say "summary"
"$python" - "$out/gpu_bench.jsonl" <<'PY'
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
for i in range(0, len(rows) - 1, 2):
    nce, torch = rows[i], rows[i + 1]
    what = f"{nce.get('bench', '?')} {nce.get('name', nce.get('model', '?'))} n/batch {nce.get('n', nce.get('batch', ''))}"
    if "missing" in nce or "missing" in torch:
        print(f"{what}: missing ({nce.get('missing', '')} {torch.get('missing', '')})")
        continue
    print(f"{what}: nce {nce['median_ms']:.2f} ms, torch {torch['median_ms']:.2f} ms, "
          f"nce/torch speed {torch['median_ms'] / nce['median_ms']:.2f}x")
PY
exit "$parity_status"
