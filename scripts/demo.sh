#!/usr/bin/env bash
# The tour: prepares and builds the clone (scripts/setup.sh), then runs `nce korquad` end to
# end: it generates Korean question/paragraph data in KorQuAD's format, trains a small text
# encoder from scratch, and prints its retrieval table beside BM25 and a hybrid (a few
# minutes on 2 cores; everything it writes lands in runs/korquad/).
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"

bash scripts/setup.sh
echo "demo: build/apps/nce korquad"
build/apps/nce korquad
