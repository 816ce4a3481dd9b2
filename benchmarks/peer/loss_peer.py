#!/usr/bin/python3
"""PyTorch's side of `nce bench loss`: the same loss, shapes and timing, one JSON line.

    /usr/bin/python3 benchmarks/peer/loss_peer.py infonce --n 4096 --d 384 [--neg M]
        [--threads T] [--reps R] [--warmup W] [--tau TAU] [--dtype float32|float64]
        [--autocast none|bfloat16] [--device cpu|cuda]

The loss is written the way a PyTorch user writes it (one matmul for the logits, then
F.cross_entropy), and autograd does the backward:

    infonce            l = q [p; neg]^T / tau;  cross_entropy(l, arange(N))
    infonce_symmetric  (cross_entropy(l, arange(N)) + cross_entropy(b, arange(N))) / 2,
                       b = l[:, :N]^T (= p q^T / tau) without negatives, p q^T / tau with them

--autocast bfloat16 computes the forward under torch.autocast("cpu", dtype=torch.bfloat16),
what a PyTorch user does for bfloat16 GEMMs (the matmul in bfloat16 through oneDNN,
cross_entropy in float32): the peer of `nce bench loss --gemm-precision bfloat16`.

--device cuda runs the same loss on the GPU (PyTorch eager, TF32 off as PyTorch's default,
the peer of `nce bench loss --device cuda`); reading the loss back (loss.item()) after the
backward waits for the GPU, as nce's run does, so each timed run is complete.

One run: fresh leaves, the loss, backward(). Warm-up runs (default 1) are left out of the
median. cpu_ms is the median CPU time of a run over the process's threads; peak_rss_mib is
the process's peak resident set (getrusage ru_maxrss), as on the nce side. Run with
Debian's /usr/bin/python3 (python3-torch). For PyTorch at its best on this machine, unset
OPENBLAS_CORETYPE and set ATEN_CPU_CAPABILITY=avx512 and OMP_WAIT_POLICY=PASSIVE before
starting it (benchmarks/run_performance.py does).
"""
import argparse
import json
import os
import resource
import statistics
import time

import torch
import torch.nn.functional as F


def blas_core():
    """The core OpenBLAS runs on: OPENBLAS_CORETYPE when set, else what the library detected."""
    try:
        import ctypes
        for name in ("libopenblas.so.0", "libopenblas.so"):
            try:
                library = ctypes.CDLL(name)
                library.openblas_get_corename.restype = ctypes.c_char_p
                return library.openblas_get_corename().decode()
            except OSError:
                continue
    except Exception:
        pass
    return os.environ.get("OPENBLAS_CORETYPE", "unknown")


def unit_rows(generator, rows, d, dtype):
    x = torch.randn(rows, d, generator=generator, dtype=dtype)
    return x / x.norm(dim=1, keepdim=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("name", choices=["infonce", "infonce_symmetric"])
    parser.add_argument("--n", type=int, default=4096)
    parser.add_argument("--d", type=int, default=384)
    parser.add_argument("--neg", type=int, default=0)
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--tau", type=float, default=0.05)
    parser.add_argument("--dtype", choices=["float32", "float64"], default="float32")
    parser.add_argument("--autocast", choices=["none", "bfloat16"], default="none")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    options = parser.parse_args()
    if options.threads > 0:
        torch.set_num_threads(options.threads)
    dtype = torch.float32 if options.dtype == "float32" else torch.float64

    generator = torch.Generator().manual_seed(1)
    q = unit_rows(generator, options.n, options.d, dtype)
    p = unit_rows(generator, options.n, options.d, dtype)
    negatives = unit_rows(generator, options.neg, options.d, dtype) if options.neg > 0 else None
    targets = torch.arange(options.n)
    device = torch.device(options.device)
    q, p, targets = q.to(device), p.to(device), targets.to(device)
    if negatives is not None:
        negatives = negatives.to(device)

    def run_once():
        with torch.autocast(options.device, dtype=torch.bfloat16, enabled=options.autocast == "bfloat16"):
            loss = forward()
        loss.backward()
        return loss.item()

    def forward():
        q_leaf = q.detach().requires_grad_()
        p_leaf = p.detach().requires_grad_()
        leaves = [q_leaf, p_leaf]
        candidates = p_leaf
        if negatives is not None:
            negatives_leaf = negatives.detach().requires_grad_()
            leaves.append(negatives_leaf)
            candidates = torch.cat([p_leaf, negatives_leaf])
        logits = q_leaf @ candidates.T / options.tau
        loss = F.cross_entropy(logits, targets)
        if options.name == "infonce_symmetric":
            if negatives is None:
                p_to_q = logits.T
            else:
                p_to_q = p_leaf @ q_leaf.T / options.tau
            loss = (loss + F.cross_entropy(p_to_q, targets)) / 2
        return loss

    loss = 0.0
    for _ in range(options.warmup):
        loss = run_once()
    milliseconds, cpu_milliseconds = [], []
    for _ in range(options.reps):
        cpu_start = time.process_time()
        start = time.perf_counter()
        loss = run_once()
        milliseconds.append((time.perf_counter() - start) * 1000.0)
        cpu_milliseconds.append((time.process_time() - cpu_start) * 1000.0)

    flops = 6.0 * options.n * (options.n + options.neg) * options.d
    median = statistics.median(milliseconds)
    line = {
        "bench": "loss", "side": "torch", "name": options.name, "n": options.n, "d": options.d,
        "neg": options.neg, "dtype": options.dtype, "device": options.device, "autocast": options.autocast, "threads": torch.get_num_threads(),
        "reps": options.reps, "median_ms": median, "min_ms": min(milliseconds),
        "cpu_ms": statistics.median(cpu_milliseconds),
        "gemm_gflop": flops / 1e9, "gemm_gflop_per_s": flops / 1e9 / (median / 1000.0),
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
        "blas_core": blas_core(), "torch": torch.__version__,
        "cpu_capability": torch.backends.cpu.get_cpu_capability()
        if hasattr(torch.backends, "cpu") and hasattr(torch.backends.cpu, "get_cpu_capability") else
        os.environ.get("ATEN_CPU_CAPABILITY", "default"),
        "loss": loss, "times_ms": milliseconds,
    }
    print(json.dumps(line))


if __name__ == "__main__":
    main()
