#!/usr/bin/env bash
# Prepares a clone of nce on Debian 12: installs the packages the build needs (only those
# missing; apt is not touched when all are present), configures build/ once, and builds it.
# Safe to run again and again; runnable from any directory. Needs root or sudo only when a
# package is missing.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"
source scripts/compiler_cache.sh

# Build tools; the engine's libraries; data/ and eval/ (SentencePiece, FAISS: cmake finds
# it); tests and benchmarks (python3 writes the .npy fixtures of the loss CLI test).
packages=(
    meson ninja-build pkg-config g++ cmake
    # a fresh clone reuses what an earlier clone on the machine compiled (scripts/compiler_cache.sh)
    ccache
    libeigen3-dev libopenblas-dev libtbb-dev libfmt-dev libcli11-dev nlohmann-json3-dev
    libsentencepiece-dev libfaiss-dev
    # ICU: Unicode for the pretrained models' tokenizers (data/unicode_text.h)
    libicu-dev
    # oneDNN: the bfloat16 GEMMs of --gemm-precision bfloat16
    libdnnl-dev
    doctest-dev libbenchmark-dev python3
    # distributed/ and its tests (mpirun): OpenMPI
    libopenmpi-dev openmpi-bin
    # python/ (`import nce`) and its pytest suite; the build skips them when absent
    pybind11-dev python3-dev python3-numpy python3-pytest
    # docs/notebooks/ and the test that runs them (skipped without them)
    python3-nbformat python3-nbclient python3-ipykernel
    # tests only: graph-cli renders `nce graph`'s DOT with dot -Tsvg (skipped without it)
    graphviz
)

say() { echo "setup: $*"; }

is_installed() {
    dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}

install_missing_packages() {
    if ! command -v dpkg-query >/dev/null 2>&1; then
        say "dpkg-query not found (not Debian?): install these yourself if the build fails: ${packages[*]}"
        return
    fi
    local missing=()
    for package in "${packages[@]}"; do
        is_installed "$package" || missing+=("$package")
    done
    if [[ ${#missing[@]} -eq 0 ]]; then
        say "all ${#packages[@]} packages present"
        return
    fi

    local as_root=()
    if [[ $(id -u) -ne 0 ]]; then
        if ! command -v sudo >/dev/null 2>&1; then
            say "missing packages: ${missing[*]}; run as root or install sudo" >&2
            exit 1
        fi
        as_root=(sudo)
    fi
    say "installing ${missing[*]}"
    "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
    "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
}

configure_build() {
    if [[ -f build/build.ninja ]]; then
        say "build/ already configured"
    elif [[ -f build/meson-private/coredata.dat ]]; then
        say "build/ half configured: reconfiguring"
        meson setup --reconfigure build
    else
        say "configuring build/"
        meson setup build
    fi
}

install_missing_packages
configure_build
say "building (ninja -C build)"
ninja -C build
say "done"
