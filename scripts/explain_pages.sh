#!/usr/bin/env bash
# Writes `nce explain NAME` into the worked-example block of docs/derivations/NAME.md (the
# lines after "$ nce explain NAME" up to the closing ```), for the losses named, or for every
# page that has such a block. Run it after a deliberate change to a loss or its example;
# tests/explain_pages_test.sh fails until the pages show what the code prints.
# Usage: bash scripts/explain_pages.sh [NAME...]      (needs build/apps/nce)
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
nce="$repo_root/build/apps/nce"
pages="$repo_root/docs/derivations"
[[ -x "$nce" ]] || { echo "explain_pages: $nce not found; build first (bash scripts/setup.sh)" >&2; exit 1; }

names=("$@")
if [[ ${#names[@]} -eq 0 ]]; then
    for page in "$pages"/*.md; do
        name="$(basename "$page" .md)"
        grep -qx "\$ nce explain $name" "$page" && names+=("$name")
    done
fi

for name in "${names[@]}"; do
    page="$pages/$name.md"
    grep -qx "\$ nce explain $name" "$page" || { echo "explain_pages: $page has no line '\$ nce explain $name'" >&2; exit 1; }
    printed="$(mktemp)"
    "$nce" explain "$name" >"$printed"  # a closed form that disagrees with the backward stops here
    awk -v command="\$ nce explain $name" -v printed="$printed" '
        $0 == command { print; while ((getline line < printed) > 0) print line; skipping = 1; next }
        skipping && /^```/ { skipping = 0 }
        !skipping { print }' "$page" >"$page.new"
    mv "$page.new" "$page"
    rm -f "$printed"
    echo "explain_pages: $page"
done
