#!/usr/bin/env bash
# The two-minute tour: prepares and builds the clone (scripts/setup.sh), then checks every
# op's hand-derived gradient against finite differences and prints the table.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"

bash scripts/setup.sh
echo "demo: build/apps/nce gradcheck --all"
build/apps/nce gradcheck --all
