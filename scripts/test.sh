#!/usr/bin/env bash
# Prepares and builds the clone (scripts/setup.sh), then runs every test suite.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"

bash scripts/setup.sh
echo "test: meson test -C build --print-errorlogs"
meson test -C build --print-errorlogs
