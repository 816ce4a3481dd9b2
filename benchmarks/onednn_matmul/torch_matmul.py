"""PyTorch's bfloat16 matmul on one thread, on the shapes onednn_matmul.cpp times.

PyTorch runs these through the oneDNN it is built with (ONEDNN_VERBOSE=1 names the kernel);
the figures sit beside those of the oneDNN nce links (benchmarks/onednn_matmul/run.sh).
"""
import time

import torch

SHAPES = [  # what, m, n, k, B stored [n, k] (transposed)
    ("q/k/v projection", 4096, 1152, 384, True),
    ("attention output", 4096, 384, 384, True),
    ("feed-forward in", 4096, 1536, 384, True),
    ("feed-forward out", 4096, 384, 1536, True),
    ("head scores", 128, 128, 32, True),
    ("head context", 128, 32, 128, False),
]


def main():
    torch.set_num_threads(1)
    print(f"PyTorch {torch.__version__}, one thread")
    for what, m, n, k, transpose_b in SHAPES:
        a = torch.ones(m, k, dtype=torch.bfloat16)
        b = torch.full((n, k) if transpose_b else (k, n), 2.0**-7, dtype=torch.bfloat16)
        operand = b.t() if transpose_b else b
        with torch.no_grad():
            torch.matmul(a, operand)
            best = float("inf")
            for _ in range(3):
                runs, start = 0, time.perf_counter()
                while runs == 0 or time.perf_counter() - start < 1.0:
                    torch.matmul(a, operand)
                    runs += 1
                best = min(best, (time.perf_counter() - start) / runs)
        gflops = 2.0 * m * n * k / best / 1e9
        print(f"{what:<17} {m:5d} x {n:5d} x {k:5d}  {gflops:8.1f} GFLOP/s  {best * 1e3:9.3f} ms")


if __name__ == "__main__":
    main()
