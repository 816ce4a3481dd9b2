#!/usr/bin/env bash
# One thread's bfloat16 matmul on a MiniLM encode's shapes, in three oneDNNs side by side:
# Debian's (the one nce links by default), PyPI's 3.2 (scripts/onednn.sh, the one
# -Donednn_dir builds against) and PyTorch's own (scripts/python_peers.sh
# sentence-transformers). Prints the CPU first; the machine should be otherwise idle.
set -euo pipefail
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo_root"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
source_file=benchmarks/onednn_matmul/onednn_matmul.cpp

echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | xargs) ($(grep -o -w -E 'amx_bf16|avx512_bf16' /proc/cpuinfo | sort -u | xargs))"
g++ -O2 -std=c++20 -fopenmp "$source_file" -ldnnl -o "$work/system"
"$work/system"
newer="$(bash scripts/onednn.sh)"
g++ -O2 -std=c++20 -fopenmp -I"$newer/include" "$source_file" -L"$newer/lib" -Wl,-rpath,"$newer/lib" -ldnnl -o "$work/newer"
"$work/newer"
PYTHONPATH="$(bash scripts/python_peers.sh sentence-transformers)" python3 benchmarks/onednn_matmul/torch_matmul.py
