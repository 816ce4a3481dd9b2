#!/usr/bin/env bash
# Installs the Python packages a parity reference or a peer benchmark needs into a folder of
# nce's cache and prints that folder, to put first on PYTHONPATH:
#
#   PYTHONPATH=$(bash scripts/python_peers.sh tokenizers) python3 scripts/...
#
# Sets:
#   tokenizers             Hugging Face's tokenizers alone (token-id references)
#   sentence-transformers  sentence-transformers, transformers and PyTorch (embedding references, peers)
#   chromadb               ChromaDB (python/nce_chroma.py serves an index from a collection)
#
# Each set lives in $NCE_CACHE/python/<set> (default ~/.cache/nce), installed with pip
# --target, never into the system Python; a second call finds it and downloads nothing.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/cache_dir.sh"

case "${1:-}" in
    tokenizers) packages=(--no-deps "tokenizers==0.23.3") ;;
    sentence-transformers) packages=("sentence-transformers==6.2.0" "transformers==5.23.0" "torch==2.15.0") ;;
    chromadb) packages=("chromadb==1.5.9") ;;
    *) echo "usage: bash scripts/python_peers.sh tokenizers|sentence-transformers|chromadb" >&2; exit 2 ;;
esac

target="$nce_cache/python/$1"
if [[ ! -f "$target/.complete" ]]; then
    echo "python_peers: installing $1 into $target" >&2
    rm -rf "$target.partial"
    nce_pip install --quiet --disable-pip-version-check --root-user-action=ignore --no-compile --target "$target.partial" "${packages[@]}" >&2
    touch "$target.partial/.complete"
    rm -rf "$target"
    mv "$target.partial" "$target"
fi
# Compiled once here, so no later process compiles PyTorch's thousands of modules again
# (about 30 s an import of sentence-transformers otherwise, where bytecode is not written).
if [[ ! -f "$target/.bytecode" ]]; then
    echo "python_peers: compiling $1's modules to bytecode" >&2
    python3 -m compileall -q -j 2 "$target" >/dev/null 2>&1 || true
    touch "$target/.bytecode"
fi
echo "$target"
