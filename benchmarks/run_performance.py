#!/usr/bin/python3
"""The performance issue's five items and issue 20's GEMM precisions, nce against PyTorch side
by side, in one run.

    /usr/bin/python3 benchmarks/run_performance.py [--build build] [--threads 2] [--reps 3] [--warmup 2]
                                                  [--quick] [--skip-large] [--precision-only]
                                                  [--openblas-coretype NAME] [--out benchmarks/results]
                                                  [--python PYTHON]

The peer is current PyTorch from PyPI (with transformers and sentence-transformers for item 7),
installed into nce's cache by scripts/python_peers.sh, never the system Python; --python names
another Python with PyTorch (e.g. /usr/bin/python3 for Debian's 1.13, run with
ATEN_CPU_CAPABILITY=avx512). Both sides run with OPENBLAS_CORETYPE unset (OpenBLAS picks
its kernels for this CPU; --openblas-coretype names one for both, where OpenBLAS does not
know the CPU) and the same thread count: nce through NCE_NUM_THREADS and --threads (with
OPENBLAS_NUM_THREADS=1: nce splits the GEMMs over its own threads and never uses OpenBLAS's),
PyTorch through torch.set_num_threads with OMP_WAIT_POLICY=PASSIVE, and as a careful user
runs it: glibc's MALLOC_MMAP_THRESHOLD_ and MALLOC_TRIM_THRESHOLD_ at 16 GiB and
MALLOC_TOP_PAD_ at 1 GiB, so that its big buffers are reused instead of faulted in afresh at
every step (issue 20 measured it 2.5-5x slower without them, which would flatter nce). Every
configuration is one process per side (so peak_rss_mib, getrusage's ru_maxrss, is that
configuration's), nce then PyTorch, back to back. Each side prints one JSON line:

  nce:    <build>/apps/nce bench loss NAME --n N --d D --threads T --reps R
          <build>/apps/nce bench step --model M --batch B --seq S --threads T --reps R
  torch:  benchmarks/peer/loss_peer.py and benchmarks/peer/step_peer.py, same arguments

The items and their targets (PASS / FAIL / MISSING per target; the exit code is 1 unless
every target passes):
  1. infonce and infonce_symmetric forward+backward, d = 384, N in {1024, 4096, 16384}: at
     N = 4096, nce reaches 70% of the fp32 peak (--peak-gflops, default 480 for 2 cores of
     this machine, scaled by threads / 2) counted on the three N·N·d GEMMs.
  2. infonce at N = 65536, d = 384 (memory-bounded logits): nce's peak RSS within 2 GiB
     (one repetition, no warm-up: about 10 TFLOP, half a minute or more).
  3. sig_predictor step (B 64, T 64): nce samples/s >= 1.7 x PyTorch's, peak RSS <= PyTorch's.
  4. text_encoder step (B 32, T 32): nce samples/s >= 2 x PyTorch's.
  5. cost growth: time against N for the loss, against B and T for the sig_predictor step,
     both sides, as tables and an SVG (<out>/cost_growth.svg).
  6. GEMM precision (issue 20), four columns in one run: nce --gemm-precision float32,
     nce --gemm-precision bfloat16, PyTorch float32 and PyTorch under torch.autocast("cpu",
     dtype=torch.bfloat16) (the peers' --autocast bfloat16), for InfoNCE one-way N 4096, d 384,
     and the sig_predictor step B 64, T 64; with the OpenBLAS core and oneDNN's ISA each side
     reports (PyTorch's from one short DNNL_VERBOSE=1 run). Targets (issue 45): nce ahead of
     the peer in each precision, bfloat16 against autocast; a precision this CPU cannot run is
     reported, not failed.
     --precision-only runs this item alone.
  7. A pretrained encoder's work (issue 45), against transformers' BertModel: the
     all-MiniLM-L6-v2 fine-tuning step (32 pairs of 128 tokens, InfoNCE tau 0.05, AdamW) and
     encoding (64 texts of 128 tokens a batch, no gradient), float32 and bfloat16 (nce --gemm-precision bfloat16, PyTorch autocast).
     Targets: step >= 1.5x PyTorch in each precision, encoding >= 2x; a precision this CPU
     cannot run (bfloat16 without AVX-512 BF16 or AMX) is reported, not failed.
     --minilm-only runs this item alone; --init FOLDER uses a folder's weights on both sides.
Everything measured goes to <out>/performance.json (written to a temporary name, then renamed).
A side that does not exist yet (a placeholder command, a missing peer script) is reported
as 'missing'.
"""
import argparse
import datetime
import json
import math
import os
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PEER_DIR = os.path.join(REPO, "benchmarks", "peer")
LOSSES = ["infonce", "infonce_symmetric"]
LOSS_SIZES = [1024, 4096, 16384]
LOSS_DIM = 384
LARGE_N = 65536


def parse_arguments():
    parser = argparse.ArgumentParser(description="nce against PyTorch: the performance issue's five items")
    parser.add_argument("--build", default="build", help="build directory holding apps/nce (default: build)")
    parser.add_argument("--threads", type=int, default=2, help="threads for both sides (default 2)")
    parser.add_argument("--reps", type=int, default=3, help="timed repetitions per configuration (default 3)")
    parser.add_argument("--warmup", type=int, default=2,
                        help="untimed runs first, both sides (default 2: a fresh process's first calls fault in "
                             "its memory and start its threads)")
    parser.add_argument("--peak-gflops", type=float, default=480.0,
                        help="fp32 peak of 2 cores in GFLOP/s (default 480: 2 cores of this machine, AVX-512)")
    parser.add_argument("--quick", action="store_true",
                        help="fewer points: loss N up to 4096, growth B and T in {16, 32, 64}")
    parser.add_argument("--skip-large", action="store_true", help="skip item 2 (N = 65536)")
    parser.add_argument("--precision-only", action="store_true",
                        help="run item 6 alone (float32 and bfloat16 GEMMs, both sides)")
    parser.add_argument("--minilm-only", action="store_true",
                        help="run item 7 alone (MiniLM-L6 step and encoding against current PyTorch)")
    parser.add_argument("--init", default="",
                        help="item 7: an all-MiniLM-L6-v2 sentence-transformers folder (default: random weights)")
    parser.add_argument("--openblas-coretype", default="",
                        help="OPENBLAS_CORETYPE for both sides (default: unset, OpenBLAS detects the core; OpenBLAS "
                             "0.3.21 does not know newer CPUs, e.g. Xeon family 6 model 207, and falls back to its "
                             "SSE3 Prescott kernels there: SkylakeX names the AVX-512 ones)")
    parser.add_argument("--python", default="",
                        help="a Python with PyTorch to run the peers (default: current PyTorch, transformers and "
                             "sentence-transformers from PyPI in nce's cache, scripts/python_peers.sh; e.g. "
                             "/usr/bin/python3 for Debian's python3-torch 1.13)")
    parser.add_argument("--out", default=os.path.join(REPO, "benchmarks", "results"),
                        help="folder for performance.json and cost_growth.svg")
    arguments = parser.parse_args()
    if arguments.threads < 1 or arguments.reps < 1 or arguments.peak_gflops <= 0:
        parser.error("--threads and --reps must be >= 1 and --peak-gflops > 0")
    return arguments


class Runner:
    """Runs one side of one configuration and returns its JSON line (or a 'missing' record)."""

    def __init__(self, arguments):
        self.arguments = arguments
        self.nce = os.path.join(arguments.build if os.path.isabs(arguments.build) else os.path.join(REPO, arguments.build),
                                "apps", "nce")
        base = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
        if arguments.openblas_coretype:
            base["OPENBLAS_CORETYPE"] = arguments.openblas_coretype
        threads = str(arguments.threads)
        # nce runs OpenBLAS single-threaded (engine/blas.h); OPENBLAS_NUM_THREADS=1 keeps
        # OpenBLAS from starting worker threads at load that nce never uses (they spin for
        # about 0.1 s before they sleep, which doubles a short run such as N = 1024).
        self.nce_env = dict(base, NCE_NUM_THREADS=threads, OPENBLAS_NUM_THREADS="1")
        self.torch_env = dict(base, OMP_WAIT_POLICY="PASSIVE", OMP_NUM_THREADS=threads,
                              MALLOC_MMAP_THRESHOLD_="17179869184", MALLOC_TRIM_THRESHOLD_="17179869184",
                              MALLOC_TOP_PAD_="1073741824")
        if arguments.python:  # a PyTorch of the user's, e.g. Debian's 1.13, which wants its AVX-512 kernels named
            self.python = arguments.python
            self.torch_env["ATEN_CPU_CAPABILITY"] = "avx512"
        else:  # current PyTorch from PyPI in nce's cache; PyTorch 2 picks its best kernels itself
            folder = current_peers_python()
            self.python = "python3" if folder else None
            if folder:
                self.torch_env["PYTHONPATH"] = folder
        self.torch_version = self._torch_version()
        self.nce_env.pop("NCE_GEMM_PRECISION", None)  # --gemm-precision decides where it matters
        self.records = []

    def _torch_version(self):
        if self.python is None:
            return None
        try:
            return subprocess.run([self.python, "-c", "import torch; print(torch.__version__)"], env=self.torch_env,
                                  capture_output=True, text=True, timeout=300).stdout.strip() or None
        except (subprocess.SubprocessError, FileNotFoundError):
            return None

    def _run(self, command, env, description):
        try:
            completed = subprocess.run(command, env=env, cwd=REPO, capture_output=True, text=True, timeout=1800)
        except FileNotFoundError:
            return {"missing": f"{command[0]} not found"}
        except subprocess.TimeoutExpired:
            return {"missing": f"{description} ran past 30 minutes"}
        lines = [line for line in completed.stdout.splitlines() if line.startswith("{")]
        if completed.returncode != 0 or not lines:
            reason = (completed.stderr.strip().splitlines() or ["no JSON line"])[-1]
            return {"missing": f"{description}: exit {completed.returncode}: {reason[:200]}"}
        try:
            return json.loads(lines[-1])
        except json.JSONDecodeError:
            return {"missing": f"{description}: unreadable JSON line"}

    def nce_side(self, kind, options):
        if not os.access(self.nce, os.X_OK):
            return {"missing": f"{self.nce} not built"}
        return self._run([self.nce, "bench", kind] + options, self.nce_env, f"nce bench {kind}")

    def torch_side(self, kind, options):
        script = os.path.join(PEER_DIR, f"{kind}_peer.py")
        if not os.path.exists(script):
            return {"missing": f"benchmarks/peer/{kind}_peer.py does not exist yet"}
        if self.torch_version is None:
            return {"missing": "no PyTorch (scripts/python_peers.sh sentence-transformers failed, or --python has none)"}
        return self._run([self.python, script] + options, self.torch_env, f"{kind}_peer.py")

    def pair(self, kind, options, torch_too=True, reps=None, precision=None):
        """Both sides of one configuration; `precision` "bfloat16" runs nce with --gemm-precision
        bfloat16 and PyTorch under autocast, "float32" both in float32, None as before."""
        reps = reps or self.arguments.reps
        common = options + ["--threads", str(self.arguments.threads), "--reps", str(reps)]
        nce_extra = ["--gemm-precision", precision] if precision else []
        torch_extra = ["--autocast", "bfloat16" if precision == "bfloat16" else "none"] if precision else []
        nce = self.nce_side(kind, common + nce_extra)
        torch = (self.torch_side(kind, common + torch_extra) if torch_too
                 else {"missing": "not run (would not fit in memory)"})
        self.records.append({"kind": kind, "options": options + nce_extra, "nce": nce, "torch": torch})
        label = f" [{precision}]" if precision else ""
        print(f"  {kind} {' '.join(options)}{label}: nce {describe(nce)} | torch {describe(torch)}", flush=True)
        return nce, torch

    def torch_onednn(self):
        """PyTorch's oneDNN under autocast, from one short DNNL_VERBOSE=1 run: its version, the
        ISA line and the matmul implementation it picks."""
        script = os.path.join(PEER_DIR, "loss_peer.py")
        command = [self.python or "python3", script, "infonce", "--n", "512", "--d", "384", "--reps", "1", "--warmup", "0",
                   "--autocast", "bfloat16", "--threads", str(self.arguments.threads)]
        try:
            completed = subprocess.run(command, env=dict(self.torch_env, DNNL_VERBOSE="1", ONEDNN_VERBOSE="1"),
                                       cwd=REPO, capture_output=True, text=True, timeout=600)
        except (FileNotFoundError, subprocess.TimeoutExpired) as error:
            return {"missing": str(error)}
        found = {}
        for line in completed.stdout.splitlines():
            fields = line.split(",")
            if len(fields) > 1 and fields[1] in ("v0", "v1"):  # oneDNN 3's lines carry a format version
                fields = fields[:1] + fields[2:]
            if len(fields) > 1 and fields[1] == "primitive":  # and a kind: onednn_verbose,v1,primitive,exec,...
                fields = fields[:1] + fields[2:]
            if len(fields) < 3 or not fields[0].endswith("_verbose"):
                continue
            if fields[1] == "info" and fields[2].startswith("oneDNN"):
                found["version"] = fields[2].split(" (")[0]
            elif len(fields) < 4:
                continue
            elif fields[1] == "info" and fields[2] == "cpu" and fields[3].startswith("isa:"):
                found["isa"] = fields[3][len("isa:"):]
            elif fields[1] == "exec" and fields[3] == "matmul" and len(fields) > 4:
                found.setdefault("matmul", fields[4])
        return found or {"missing": "no DNNL_VERBOSE lines (PyTorch without oneDNN?)"}


def describe(side):
    if "missing" in side:
        return "missing"
    return f"{side['median_ms']:.1f} ms, {side['peak_rss_mib']:.0f} MiB"


def ok(side):
    return "missing" not in side


def speedup(nce, torch):
    return torch["median_ms"] / nce["median_ms"] if ok(nce) and ok(torch) else None


def number(value, form="{:.2f}"):
    return "missing" if value is None else form.format(value)


def loss_gflop(n, d):
    """The three N·N·d GEMMs of an InfoNCE forward+backward (logits, dq, dp)."""
    return 3 * 2.0 * n * n * d / 1e9


def step_gflop(model, batch, seq):
    """Matrix-product FLOPs of one training step (forward, then backward at twice the
    forward, except the first layer of sig_predictor, whose input needs no gradient)."""
    def layers(tokens, sequences, length, d_model, heads, feed_forward):
        dense = 2.0 * tokens * d_model * (3 * d_model + d_model + 2 * feed_forward)
        attention = 2 * 2.0 * sequences * length * length * d_model
        return 2 * (dense + attention)  # 2 layers
    if model == "sig_predictor":
        tokens = batch * seq
        forward = 2.0 * tokens * 2048 * 512 + layers(tokens, batch, seq, 512, 8, 2048) + 2.0 * batch * 512 * 256
        return (forward + 2 * (forward - 2.0 * tokens * 2048 * 512) + 2.0 * tokens * 2048 * 512) / 1e9
    tokens = 2 * batch * seq  # queries and passages
    forward = layers(tokens, 2 * batch, seq, 128, 4, 512)
    return 3 * forward / 1e9


def table(headers, rows):
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) if rows else len(str(h)) for i, h in enumerate(headers)]
    line = lambda cells: "| " + " | ".join(str(c).rjust(w) for c, w in zip(cells, widths)) + " |"
    print(line(headers))
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in rows:
        print(line(row))


def verdict(condition):
    return "MISSING" if condition is None else ("PASS" if condition else "FAIL")


def svg_panel(x0, y0, width, height, title, x_label, series, log_x):
    """One log-log (or log-y) panel: series = [(name, colour, [(x, ms), ...])]."""
    points = [p for _, _, data in series for p in data]
    parts = [f'<text x="{x0 + width / 2}" y="{y0 - 8}" text-anchor="middle" font-size="13">{title}</text>',
             f'<rect x="{x0}" y="{y0}" width="{width}" height="{height}" fill="none" stroke="#888"/>']
    if not points:
        parts.append(f'<text x="{x0 + width / 2}" y="{y0 + height / 2}" text-anchor="middle">missing</text>')
        return parts
    fx = (lambda v: math.log(v)) if log_x else (lambda v: v)
    xs = [fx(p[0]) for p in points]
    ys = [math.log(p[1]) for p in points]
    x_low, x_high = min(xs), max(xs) if max(xs) > min(xs) else min(xs) + 1
    y_low, y_high = min(ys) - 0.1, max(ys) + 0.1
    sx = lambda v: x0 + 10 + (fx(v) - x_low) / (x_high - x_low) * (width - 20)
    sy = lambda v: y0 + height - 10 - (math.log(v) - y_low) / (y_high - y_low) * (height - 20)
    for value in sorted({p[0] for p in points}):
        parts.append(f'<text x="{sx(value):.1f}" y="{y0 + height + 14}" text-anchor="middle" font-size="10">{value}</text>')
    for exponent in range(math.floor(y_low / math.log(10)), math.ceil(y_high / math.log(10)) + 1):
        for mantissa in (1, 2, 5):
            ms = mantissa * 10 ** exponent
            if y_low <= math.log(ms) <= y_high:
                parts.append(f'<text x="{x0 - 4}" y="{sy(ms) + 3:.1f}" text-anchor="end" font-size="10">{ms:g}</text>')
                parts.append(f'<line x1="{x0}" x2="{x0 + width}" y1="{sy(ms):.1f}" y2="{sy(ms):.1f}" stroke="#eee"/>')
    parts.append(f'<text x="{x0 + width / 2}" y="{y0 + height + 28}" text-anchor="middle" font-size="11">{x_label}</text>')
    for index, (name, colour, data) in enumerate(series):
        data = sorted(data)
        if data:
            path = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in data)
            parts.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
            parts += [f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="3" fill="{colour}"/>' for x, y in data]
        parts.append(f'<text x="{x0 + 8}" y="{y0 + 14 + 13 * index}" font-size="10" fill="{colour}">{name}</text>')
    return parts


def write_atomically(path, text):
    folder = os.path.dirname(path)
    os.makedirs(folder, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=folder, prefix=".tmp-")
    try:
        os.chmod(temporary, 0o644)
        with os.fdopen(handle, "w") as out:
            out.write(text)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def precision_item(runner, warmup, targets):
    """Item 6: the issue-20 table, four columns a row; returns what each side's oneDNN said."""
    print("6. GEMM precision: nce float32 / bfloat16 (--gemm-precision) beside PyTorch float32 / "
          "torch.autocast(\"cpu\", dtype=torch.bfloat16)")
    configurations = [("InfoNCE one-way fwd+bwd, N 4096, d 384", "loss",
                       ["infonce", "--n", "4096", "--d", str(LOSS_DIM)]),
                      ("sig_predictor step, B 64, T 64", "step", ["--model", "sig_predictor", "--batch", "64", "--seq", "64"])]
    results = {(name, precision): runner.pair(kind, options + warmup, precision=precision)
               for name, kind, options in configurations for precision in ("float32", "bfloat16")}
    ms = lambda side: number(side.get("median_ms"), "{:.1f}")
    per_s = lambda side: number(side.get("samples_per_s"), "{:.0f}")
    rows = []
    for name, kind, _ in configurations:
        (nce32, torch32), (nce16, torch16) = results[(name, "float32")], results[(name, "bfloat16")]
        rate = ms if kind == "loss" else (lambda side: f"{ms(side)} ({per_s(side)}/s)")
        rows.append([name, rate(nce32), rate(nce16), rate(torch32), rate(torch16), number(speedup(nce16, nce32)),
                     number(speedup(nce32, torch32)), number(speedup(nce16, torch16)),
                     number(speedup(nce16, torch32))])
    table(["work (ms; samples/s)", "nce fp32", "nce bf16", "torch fp32", "torch autocast bf16",
           "nce bf16 vs fp32", "nce/torch fp32", "nce/torch bf16", "nce bf16 / torch fp32"], rows)
    print("(a ratio above 1: the first named is faster; nce bf16 vs fp32 above 1: bfloat16 is the faster)")
    cpu = lambda side: number(side.get("cpu_ms"), "{:.0f}")
    table(["work (CPU ms, all threads)", "nce fp32", "nce bf16", "torch fp32", "torch autocast bf16"],
          [[name] + [cpu(results[(name, precision)][side]) for side in (0, 1) for precision in ("float32", "bfloat16")]
           for name, _, _ in configurations])
    print("(CPU ms: on a loaded machine the steadier comparison)")
    # Issue 45's bar for these two: ahead of the peer in each precision (bfloat16 against autocast).
    for name, _, _ in configurations:
        for precision in ("float32", "bfloat16"):
            nce, torch = results[(name, precision)]
            if precision == "bfloat16" and "cannot make a bfloat16 matmul" in nce.get("missing", ""):
                continue  # no bfloat16 GEMM on this CPU: reported in the table, not failed
            ratio = speedup(nce, torch)
            targets[f"6. {name}, {precision}: nce ahead of PyTorch"] = None if ratio is None else ratio > 1.0
    onednn = {"nce": sorted({side.get("onednn_isa", "?") for side, _ in results.values() if ok(side)}),
              "torch": runner.torch_onednn()}
    print(f"oneDNN: nce {onednn['nce']} (bench's onednn_isa); torch {onednn['torch']} (DNNL_VERBOSE=1)\n")
    return onednn


def current_peers_python():
    """python3 with PyPI's PyTorch, transformers and sentence-transformers on its path, in nce's
    cache (scripts/python_peers.sh installs them the first time); None when that fails."""
    try:
        folder = subprocess.run(["bash", os.path.join(REPO, "scripts", "python_peers.sh"), "sentence-transformers"],
                                capture_output=True, text=True, timeout=1800, check=True).stdout.strip()
    except (subprocess.SubprocessError, FileNotFoundError):
        return None
    return folder


def minilm_item(runner, warmup, targets):
    """Item 7: all-MiniLM-L6-v2's fine-tuning step and encoding, both precisions, both sides."""
    version = subprocess.run([runner.python or "python3", "-c", "import transformers; print(transformers.__version__)"],
                             env=runner.torch_env, capture_output=True, text=True).stdout.strip() or "?"
    print(f"7. MiniLM-L6 (all-MiniLM-L6-v2's shapes, {runner.arguments.init or 'random weights'}) against "
          f"PyTorch {runner.torch_version or 'missing'} eager, transformers {version}")
    init = ["--init", runner.arguments.init] if runner.arguments.init else []
    configurations = [("fine-tuning step, 32 pairs x 128 tokens", ["--model", "minilm", *init], 1.5),
                      ("encoding, 64 texts x 128 tokens a batch", ["--model", "minilm", "--encode", "--batch", "64", *init], 2.0)]
    rows, found = [], {}
    for name, options, bar in configurations:
        for precision in ("float32", "bfloat16"):
            nce = runner.nce_side("step", options + warmup + ["--threads", str(runner.arguments.threads), "--reps",
                                                               str(runner.arguments.reps), "--gemm-precision", precision])
            if precision == "bfloat16" and "cannot make a bfloat16 matmul" in nce.get("missing", ""):
                # No bfloat16 GEMM on this CPU (oneDNN needs AVX-512 BF16 or AMX): no target, and
                # the peer is not run (autocast emulates it there, minutes a step).
                rows.append([name, precision, "no bf16 GEMM on this CPU", "not run", "", f">= {bar}"])
                continue
            nce, torch = runner.pair("step", options + warmup, precision=precision)
            found[(name, precision)] = (nce, torch)
            ratio = speedup(nce, torch)
            rows.append([name, precision, number(nce.get("samples_per_s"), "{:.1f}"),
                         number(torch.get("samples_per_s"), "{:.1f}"), number(ratio), f">= {bar}"])
            targets[f"7. MiniLM-L6 {name}, {precision}: nce >= {bar}x PyTorch"] = None if ratio is None else ratio >= bar
    table(["work (samples/s; texts/s for encoding)", "precision", "nce", "torch", "nce/torch", "bar"], rows)
    print()
    return {f"{name} {precision}": {"nce": nce, "torch": torch} for (name, precision), (nce, torch) in found.items()}


def main():
    arguments = parse_arguments()
    runner = Runner(arguments)
    threads = arguments.threads
    peak = arguments.peak_gflops * threads / 2.0
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    with open("/proc/loadavg") as loadavg:
        load = " ".join(loadavg.read().split()[:3])
    print(f"run_performance: {started}, {os.cpu_count()} cores, load average {load}")
    print(f"threads {threads} on both sides (nce: OPENBLAS_NUM_THREADS=1, its GEMMs split over its own threads); "
          f"OPENBLAS_CORETYPE {arguments.openblas_coretype or 'unset'} for both (environment had "
          f"{os.environ.get('OPENBLAS_CORETYPE', 'it unset')}); torch {runner.torch_version or 'missing'} "
          f"({runner.python or 'no peer'}){', ATEN_CPU_CAPABILITY=avx512' if runner.arguments.python else ''}, "
          f"OMP_WAIT_POLICY=PASSIVE, MALLOC_MMAP_THRESHOLD_=MALLOC_TRIM_THRESHOLD_=17179869184, "
          f"MALLOC_TOP_PAD_=1073741824; median of {arguments.reps} after {arguments.warmup} warm-up; fp32 peak {peak:.0f} GFLOP/s\n")
    targets = {}
    warmup = ["--warmup", str(arguments.warmup)]
    sizes = LOSS_SIZES[:2] if arguments.quick else LOSS_SIZES

    if arguments.minilm_only:
        with open("/proc/cpuinfo") as cpuinfo:
            text = cpuinfo.read()
        model = next((line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("model name")), "?")
        flags = sorted({f for f in ("avx2", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile") if f" {f}" in text})
        print(f"CPU: {model}; {' '.join(flags)}")
        minilm = minilm_item(runner, warmup, targets)
        cores = {side: sorted({r[side].get("blas_core") for r in runner.records if ok(r[side])}) for side in ("nce", "torch")}
        isa = sorted({r["nce"].get("onednn_isa", "?") for r in runner.records if ok(r["nce"])})
        print(f"nce: OpenBLAS core {cores['nce']}, oneDNN ISA {isa}; torch: {runner.torch_onednn()}")
        print("\ntargets:")
        for name, condition in targets.items():
            print(f"  {verdict(condition):8} {name}")
        summary = {"started": started, "load_average": load, "threads": threads, "cpu": model, "flags": flags,
                   "blas_core": cores, "targets": {k: verdict(v) for k, v in targets.items()}, "minilm": minilm}
        json_path = os.path.join(arguments.out, "minilm.json")
        write_atomically(json_path, json.dumps(summary, indent=1) + "\n")
        print(f"results: {os.path.relpath(json_path, REPO)}")
        return 0 if all(targets.values()) else 1

    if not arguments.precision_only:
        # 1 (and the loss half of 5): the loss at each N.
        print("1. InfoNCE forward+backward, d = 384")
        loss_results = {}
        for name in LOSSES:
            for n in sizes:
                loss_results[(name, n)] = runner.pair("loss", [name, "--n", str(n), "--d", str(LOSS_DIM), *warmup])
        rows = []
        for (name, n), (nce, torch) in loss_results.items():
            efficiency = loss_gflop(n, LOSS_DIM) / (nce["median_ms"] / 1000) / peak if ok(nce) else None
            rows.append([name, n, number(nce.get("median_ms"), "{:.1f}"), number(torch.get("median_ms"), "{:.1f}"),
                         number(speedup(nce, torch)), number(efficiency and 100 * efficiency, "{:.0f}%"),
                         number(nce.get("peak_rss_mib"), "{:.0f}"), number(torch.get("peak_rss_mib"), "{:.0f}")])
        table(["loss", "N", "nce ms", "torch ms", "speedup", "nce % peak (3 GEMMs)", "nce MiB", "torch MiB"], rows)
        for name in LOSSES:
            nce, _ = loss_results[(name, 4096)]
            efficiency = loss_gflop(4096, LOSS_DIM) / (nce["median_ms"] / 1000) / peak if ok(nce) else None
            targets[f"1. {name} N=4096 >= 70% of peak"] = None if efficiency is None else efficiency >= 0.70
        print()

        # 2: the memory-bounded logits.
        if not arguments.skip_large:
            print(f"2. infonce at N = {LARGE_N}, d = {LOSS_DIM}: peak memory (PyTorch not run: its logits alone are 16 GiB)")
            nce, _ = runner.pair("loss", ["infonce", "--n", str(LARGE_N), "--d", str(LOSS_DIM), "--warmup", "0"],
                                 torch_too=False, reps=1)
            table(["loss", "N", "nce ms", "nce peak MiB", "limit MiB"],
                  [["infonce", LARGE_N, number(nce.get("median_ms"), "{:.0f}"), number(nce.get("peak_rss_mib"), "{:.0f}"),
                    2048]])
            targets["2. infonce N=65536 within 2 GiB"] = nce["peak_rss_mib"] <= 2048 if ok(nce) else None
            print()

        # 3 and 4: the two training steps at the shapes.
        print("3-4. one training step (zero_grad, encode, loss, backward, AdamW)")
        steps = {model: runner.pair("step", ["--model", model, "--batch", str(batch), "--seq", str(seq), *warmup])
                 for model, batch, seq in [("sig_predictor", 64, 64), ("text_encoder", 32, 32)]}
        rows = []
        for (model, (nce, torch)), (batch, seq) in zip(steps.items(), [(64, 64), (32, 32)]):
            gflop = step_gflop(model, batch, seq)
            rows.append([model, f"{batch}x{seq}", number(nce.get("median_ms"), "{:.1f}"),
                         number(torch.get("median_ms"), "{:.1f}"), number(nce.get("samples_per_s"), "{:.0f}"),
                         number(torch.get("samples_per_s"), "{:.0f}"), number(speedup(nce, torch)),
                         number(ok(nce) and 100 * gflop / (nce["median_ms"] / 1000) / peak or None, "{:.0f}%"),
                         number(nce.get("peak_rss_mib"), "{:.0f}"), number(torch.get("peak_rss_mib"), "{:.0f}"),
                         number(nce.get("cpu_ms"), "{:.0f}"), number(torch.get("cpu_ms"), "{:.0f}")])
        table(["model", "B x T", "nce ms", "torch ms", "nce samples/s", "torch samples/s", "speedup", "nce % peak",
               "nce MiB", "torch MiB", "nce CPU ms", "torch CPU ms"], rows)
        print("(CPU ms: a step's CPU time over all threads; on a loaded machine it is the steadier comparison)")
        sig_nce, sig_torch = steps["sig_predictor"]
        sig_speedup = speedup(sig_nce, sig_torch)
        targets["3. sig_predictor >= 1.7x torch samples/s"] = None if sig_speedup is None else sig_speedup >= 1.7
        targets["3. sig_predictor peak memory <= torch's"] = (sig_nce["peak_rss_mib"] <= sig_torch["peak_rss_mib"]
                                                             if ok(sig_nce) and ok(sig_torch) else None)
        text_speedup = speedup(*steps["text_encoder"])
        targets["4. text_encoder >= 2x torch samples/s"] = None if text_speedup is None else text_speedup >= 2.0
        print()

        # 5: how cost grows with B and T (the loss's growth with N is item 1's table).
        growth_values = [16, 32, 64] if arguments.quick else [16, 32, 64, 128]
        print("5. cost growth of the sig_predictor step (the loss against N is in table 1)")
        growth = {}
        for axis, fixed in (("batch", ("--seq", "64")), ("seq", ("--batch", "64"))):
            for value in growth_values:
                if value == 64:
                    growth[(axis, value)] = steps["sig_predictor"]
                    continue
                growth[(axis, value)] = runner.pair("step", ["--model", "sig_predictor", f"--{axis}", str(value), *fixed, *warmup])
        rows = [[axis, value, number(nce.get("median_ms"), "{:.1f}"), number(torch.get("median_ms"), "{:.1f}"),
                 number(speedup(nce, torch))] for (axis, value), (nce, torch) in growth.items()]
        table(["varied (other = 64)", "value", "nce ms", "torch ms", "speedup"], rows)
        loss_series = [(f"{name} {side}", colour, [(n, loss_results[(name, n)][i]["median_ms"]) for n in sizes
                                                   if ok(loss_results[(name, n)][i])])
                       for name, colours in zip(LOSSES, (("#1f77b4", "#9ecae1"), ("#d62728", "#fc9272")))
                       for i, (side, colour) in enumerate(zip(("nce", "torch"), colours))]
        step_series = {axis: [(side, colour, [(value, growth[(axis, value)][i]["median_ms"]) for value in growth_values
                                              if ok(growth[(axis, value)][i])])
                              for i, (side, colour) in enumerate((("nce", "#1f77b4"), ("torch", "#d62728")))]
                       for axis in ("batch", "seq")}
        svg = ['<svg xmlns="http://www.w3.org/2000/svg" width="960" height="330" font-family="sans-serif">',
               '<rect width="960" height="330" fill="white"/>',
               f'<text x="480" y="18" text-anchor="middle" font-size="14">Cost growth, ms (log scale), threads {threads}, '
               f'{started}</text>']
        svg += svg_panel(60, 50, 250, 230, "InfoNCE fwd+bwd, d=384", "N", loss_series, True)
        svg += svg_panel(370, 50, 250, 230, "sig_predictor step, T=64", "batch B", step_series["batch"], True)
        svg += svg_panel(680, 50, 250, 230, "sig_predictor step, B=64", "sequence T", step_series["seq"], True)
        svg.append("</svg>\n")
        svg_path = os.path.join(arguments.out, "cost_growth.svg")
        write_atomically(svg_path, "\n".join(svg))
        growth_complete = all(ok(n) and ok(t) for n, t in growth.values()) and all(
            ok(n) and ok(t) for n, t in loss_results.values())
        targets["5. growth tables and SVG complete"] = growth_complete if growth_complete else None
        print(f"\nSVG: {os.path.relpath(svg_path, REPO)}")

    # 6: float32 and bfloat16 GEMMs, both sides, in the same run.
    onednn = precision_item(runner, warmup, targets)

    # What each side ran with.
    cores = {side: sorted({r[side].get("blas_core") for r in runner.records if ok(r[side])}) for side in ("nce", "torch")}
    used_threads = {side: sorted({r[side].get("threads") for r in runner.records if ok(r[side])})
                    for side in ("nce", "torch")}
    print(f"\nthreads used: nce {used_threads['nce']}, torch {used_threads['torch']}; "
          f"OpenBLAS core: nce {cores['nce'] or 'missing'}, torch {cores['torch'] or 'missing'}")
    for note in sorted({r["nce"].get("blas_core_mismatch") for r in runner.records if ok(r["nce"])} - {"", None}):
        print(f"note: {note}")

    print("\ntargets:")
    for name, condition in targets.items():
        print(f"  {verdict(condition):8} {name}")
    summary = {"started": started, "load_average": load, "threads": threads,
               "openblas_coretype": arguments.openblas_coretype or "unset", "reps": arguments.reps,
               "peak_gflops": peak, "blas_core": cores, "onednn": onednn, "targets": {k: verdict(v) for k, v in targets.items()},
               "records": runner.records}
    json_path = os.path.join(arguments.out, "performance.json")
    write_atomically(json_path, json.dumps(summary, indent=1) + "\n")
    print(f"results: {os.path.relpath(json_path, REPO)}")
    return 0 if all(targets.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
