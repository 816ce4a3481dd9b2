#!/usr/bin/env bash
# Packs what a GPU machine without Debian's packages needs to run nce's GPU checks
# (benchmarks/gpu/run_checks.sh): build/apps/nce and build/tests/test_cuda_parity_device,
# both built here with the CUDA toolkit, and every shared library they load that such a
# machine may lack (the ldd closure, less glibc, the C++ runtime, the NVIDIA driver and the
# CUDA runtime and cuBLAS, which the GPU machine's own CUDA toolkit provides).
#
#     bash benchmarks/gpu/make_bundle.sh [build] [out.tar.xz]    # default: build, .device/bundle.tar.xz
#
# The archive unpacks to apps/nce, tests/test_cuda_parity_device and lib/.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${1:-$repo_root/build}"
archive="${2:-$repo_root/.device/bundle.tar.xz}"
binaries=("$build/apps/nce" "$build/tests/test_cuda_parity_device")
for binary in "${binaries[@]}"; do
    [[ -x "$binary" ]] || { echo "make_bundle: $binary is not built: run scripts/setup.sh on a machine with the CUDA toolkit" >&2; exit 1; }
done

staging="$(mktemp -d)"
trap 'rm -rf "$staging"' EXIT
mkdir -p "$staging/apps" "$staging/tests" "$staging/lib"
cp "${binaries[0]}" "$staging/apps/"
cp "${binaries[1]}" "$staging/tests/"

# Libraries the GPU machine brings itself: glibc's, the C++ runtime's, NVIDIA's.
left_behind='^(linux-vdso|ld-linux|libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s|libcuda|libcudart|libcublas|libcublasLt)\.'
ldd "${binaries[@]}" | awk '/=> \// {print $1, $3}' | sort -u | while read -r soname path; do
    [[ "$soname" =~ $left_behind ]] && continue
    cp -L "$path" "$staging/lib/$soname"
done

mkdir -p "$(dirname "$archive")"
tar -C "$staging" -cJf "$archive.partial" . && mv "$archive.partial" "$archive"
echo "make_bundle: $archive ($(du -h "$archive" | cut -f1)): $(ls "$staging/lib" | wc -l) libraries"
