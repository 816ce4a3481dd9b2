#!/usr/bin/env bash
# Draws the autograd graph of every loss on its 3-row example (`nce graph NAME --rows 3
# --values`: the worked example when it has 3 rows, else a random one as nce gradcheck draws
# it) into docs/derivations/graphs/NAME.svg, and the op-by-op form of each loss that has
# one (`--expanded`) into NAME_expanded.svg. For the names given, or for every loss. Run it
# after a change to a loss, its example or the drawing (engine/graph_dot.cpp).
# Usage: bash scripts/draw_graphs.sh [NAME...]      (needs build/apps/nce and Graphviz's dot)
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
nce="$repo_root/build/apps/nce"
[[ -x "$nce" ]] || { echo "draw_graphs: $nce not found; build first (bash scripts/setup.sh)" >&2; exit 1; }
command -v dot >/dev/null || { echo "draw_graphs: dot not found; install Graphviz (apt-get install graphviz)" >&2; exit 1; }

out="$repo_root/docs/derivations/graphs"
mkdir -p "$out"
names=("$@")
if [[ ${#names[@]} -eq 0 ]]; then
    while read -r name column _; do
        [[ "$column" == "inputs:" ]] && names+=("$name")
    done < <("$nce" loss --list)
fi

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
# draw NAME FILE [ARGS...]: the DOT of `nce graph NAME --rows 3 --values ARGS` as FILE.svg.
draw() {
    local name="$1" file="$2"
    shift 2
    "$nce" graph "$name" --rows 3 --values "$@" --output "$scratch/$file.dot" >/dev/null
    dot -Tsvg "$scratch/$file.dot" -o "$scratch/$file.svg"
    mv "$scratch/$file.svg" "$out/$file.svg"
    echo "draw_graphs: docs/derivations/graphs/$file.svg"
}
for name in "${names[@]}"; do
    draw "$name" "$name"
    # The losses with an op-by-op form also get that picture.
    if "$nce" graph "$name" --expanded >/dev/null 2>&1; then draw "$name" "${name}_expanded" --expanded; fi
done
