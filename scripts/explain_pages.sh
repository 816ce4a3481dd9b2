#!/usr/bin/env bash
# Writes `nce explain NAME` into the worked-example block of NAME's page (the lines after
# "$ nce explain NAME" up to the closing ```): a loss's page is docs/derivations/NAME.md, an
# op example's is the one `nce explain --list` names under docs/derivations/ops/ (one page
# may hold several examples, e.g. gelu and gelu_tanh). For the names given, or for every
# block in every page. Run it after a deliberate change to a loss, an op or its example;
# tests/explain_pages_test.sh fails until the pages show what the code prints.
# Usage: bash scripts/explain_pages.sh [NAME...]      (needs build/apps/nce)
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
nce="$repo_root/build/apps/nce"
[[ -x "$nce" ]] || { echo "explain_pages: $nce not found; build first (bash scripts/setup.sh)" >&2; exit 1; }

# NAME KIND PAGE, one a line, for every loss and op example.
listing="$("$nce" explain --list)"

names=("$@")
if [[ ${#names[@]} -eq 0 ]]; then
    while read -r name _ page; do
        [[ -f "$repo_root/$page" ]] && grep -qx "\$ nce explain $name" "$repo_root/$page" && names+=("$name")
    done <<<"$listing"
fi

for name in "${names[@]}"; do
    page="$(awk -v name="$name" '$1 == name { print $3 }' <<<"$listing")"
    [[ -n "$page" ]] || { echo "explain_pages: '$name' is neither a loss nor an op example (nce explain --list)" >&2; exit 1; }
    page="$repo_root/$page"
    grep -qx "\$ nce explain $name" "$page" || { echo "explain_pages: $page has no line '\$ nce explain $name'" >&2; exit 1; }
    printed="$(mktemp)"
    "$nce" explain "$name" >"$printed"  # a closed form that disagrees with the backward stops here
    awk -v command="\$ nce explain $name" -v printed="$printed" '
        $0 == command { print; while ((getline line < printed) > 0) print line; skipping = 1; next }
        skipping && /^```/ { skipping = 0 }
        !skipping { print }' "$page" >"$page.new"
    mv "$page.new" "$page"
    rm -f "$printed"
    echo "explain_pages: $page ($name)"
done
