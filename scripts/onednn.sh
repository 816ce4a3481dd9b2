#!/usr/bin/env bash
# Installs a newer oneDNN than Debian 12's 2.6 into nce's cache and prints its folder, for a
# build against it:
#
#   meson setup build-onednn3 -Donednn_dir=$(bash scripts/onednn.sh) && ninja -C build-onednn3 apps/nce
#
# PyPI's onednn-cpu-gomp 2023.2.0 is oneDNN 3.2 built on GNU OpenMP (the runtime nce already
# sets per call) with no other dependency. The later PyPI releases (onednn 2025.x, 2026.x) are
# SYCL builds whose CPU engine needs a SYCL CPU device (Intel's OpenCL CPU runtime), and do not
# serve a plain CPU build. The wheels' files go to $NCE_CACHE/onednn-3.2/{include,lib}; a
# second call finds them and downloads nothing.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/cache_dir.sh"

target="$nce_cache/onednn-3.2"
if [[ ! -f "$target/.complete" ]]; then
    echo "onednn: installing oneDNN 3.2 (PyPI onednn-cpu-gomp) into $target" >&2
    work="$(mktemp -d)"
    trap 'rm -rf "$work"' EXIT
    nce_pip download --quiet --disable-pip-version-check --no-deps -d "$work/wheels" \
        "onednn-cpu-gomp==2023.2.0" "onednn-devel-cpu-gomp==2023.2.0" >&2
    rm -rf "$target.partial"
    mkdir -p "$target.partial/lib" "$work/unpacked"
    for wheel in "$work"/wheels/*.whl; do
        python3 -m zipfile -e "$wheel" "$work/unpacked"
    done
    cp -a "$work"/unpacked/onednn_devel_cpu_gomp-*.data/data/include "$target.partial/"
    cp "$work"/unpacked/onednn_cpu_gomp-*.data/data/lib/libdnnl.so.3.2 "$target.partial/lib/"
    ln -s libdnnl.so.3.2 "$target.partial/lib/libdnnl.so.3"
    ln -s libdnnl.so.3 "$target.partial/lib/libdnnl.so"
    touch "$target.partial/.complete"
    rm -rf "$target"
    mv "$target.partial" "$target"
fi
echo "$target"
