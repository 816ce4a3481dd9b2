#!/usr/bin/python3
"""Does --gemm-precision bfloat16 train as well as float32? (issue 20's validation runs)

    /usr/bin/python3 benchmarks/bfloat16_validation.py [--build build] [--seeds 1 2 3] [--steps 300]
                                                        [--out /tmp/nce-bfloat16-validation]

Two models, two precisions, three seeds, 300 steps each, every run one `nce` process with
NCE_NUM_THREADS=2 (--threads):

  sig_predictor   nce code features on `nce code make-features`' default synthetic folder
                  (2,000 functions, 16 tokens of 32 features -> 32-dimensional bodies), the
                  command's defaults otherwise: d_model 128, 2 layers, 4 heads, feed-forward
                  256, batch 64, infonce, validation every 100 steps
  text_encoder    nce korquad on its generated data, smaller than its defaults so that the
                  twelve runs take minutes: d_model 64, 2 layers, 4 heads, feed-forward 128,
                  batch 64, infonce_symmetric, no corpus pretraining, validation every 50 steps

The seed fixes the split, the initialisation and the batches (and korquad's generated data),
so the float32 seeds' spread is the noise a precision has to stay within. The metric is the
best validation MRR@10 of the run (results.json training.best_validation_mrr@10, what picks
the checkpoint); the test MRR@10 of the trained model is printed beside it. The table: per
model and precision, the mean, min and max over the seeds; bfloat16 passes when its mean lies
inside the float32 seeds' [min, max]. The last column is the largest difference between the
two precisions at one seed (same data, split, initialisation and batches). CPU seconds (user
+ system) per run are printed, since the machine may be shared. A measurement, not a test:
the exit code is 0.
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PRECISIONS = ["float32", "bfloat16"]
TEXT_ENCODER_FLAGS = ["--no-pretrain", "--d-model", "64", "--nhead", "4", "--num-layers", "2",
                      "--dim-feedforward", "128", "--batch-size", "64", "--evaluate-every", "50"]


def parse_arguments():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", default=os.path.join(REPO, "build"))
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", default="/tmp/nce-bfloat16-validation")
    parser.add_argument("--table-only", action="store_true", help="print the table of <out>/runs.json, run nothing")
    return parser.parse_args()


def children_cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_nce(nce, arguments, threads, log_path):
    """Runs nce with `arguments`; returns (wall seconds, CPU seconds). Stops the script on failure."""
    # OPENBLAS_NUM_THREADS=1: nce splits its GEMMs over its own threads; OpenBLAS's own would
    # only spin at start-up (benchmarks/run_performance.py).
    environment = dict(os.environ, NCE_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS="1")
    environment.pop("NCE_GEMM_PRECISION", None)  # the flag decides
    cpu_before, wall_before = children_cpu_seconds(), time.monotonic()
    with open(log_path, "w") as log:
        finished = subprocess.run([nce] + arguments, stdout=log, stderr=subprocess.STDOUT, env=environment)
    wall, cpu = time.monotonic() - wall_before, children_cpu_seconds() - cpu_before
    if finished.returncode != 0:
        sys.exit(f"bfloat16_validation: `nce {' '.join(arguments)}` failed (exit {finished.returncode}); see {log_path}")
    return wall, cpu


def read_metrics(output, trained_row):
    with open(os.path.join(output, "results.json")) as file:
        results = json.load(file)
    row = next(r for r in results["rows"] if r["name"] == trained_row)
    return {"validation_mrr@10": results["training"]["best_validation_mrr@10"],
            "test_mrr@10": row["metrics"]["mrr@10"], "gemm_precision": results["gemm_precision"]}


def main():
    args = parse_arguments()
    if args.table_only:
        with open(os.path.join(args.out, "runs.json")) as file:
            print_table(json.load(file), args)
        return
    nce = os.path.join(args.build, "apps", "nce")
    os.makedirs(args.out, exist_ok=True)
    features = os.path.join(args.out, "features")
    if not os.path.isdir(features):
        run_nce(nce, ["code", "make-features", "--out", features], args.threads, os.path.join(args.out, "features.log"))
    models = {  # model -> (its command, its row of the table)
        "sig_predictor": (["code", "features", "--features", features], "trained sig_predictor"),
        "text_encoder": (["korquad", "train"] + TEXT_ENCODER_FLAGS, "trained model"),
    }
    runs = []
    for model, (command, trained_row) in models.items():
        for precision in PRECISIONS:
            for seed in args.seeds:
                output = os.path.join(args.out, f"{model}_{precision}_seed{seed}")
                arguments = command + [
                    "--max-steps", str(args.steps), "--seed", str(seed), "--gemm-precision", precision,
                    "--output", output]
                wall, cpu = run_nce(nce, arguments, args.threads, output + ".log")
                metrics = read_metrics(output, trained_row)
                assert metrics["gemm_precision"] == precision, (output, metrics["gemm_precision"])
                runs.append(dict(model=model, precision=precision, seed=seed, wall_s=wall, cpu_s=cpu, **metrics))
                print(f"{model:13s} {precision:8s} seed {seed}: validation MRR@10 {metrics['validation_mrr@10']:.4f}, "
                      f"test MRR@10 {metrics['test_mrr@10']:.4f}  ({wall:.0f} s wall, {cpu:.0f} CPU-s)", flush=True)
    with open(os.path.join(args.out, "runs.json"), "w") as file:
        json.dump(runs, file, indent=1)
    print_table(runs, args)


def print_table(runs, args):
    print(f"\n{args.steps} steps, seeds {args.seeds}, {args.threads} threads; validation MRR@10 (best of the run) "
          "per model and GEMM precision")
    print(f"{'model':13s} {'precision':9s} {'mean':>7s} {'min':>7s} {'max':>7s} {'spread':>7s} {'test mean':>9s} "
          f"{'CPU-s/run':>9s}  bfloat16 mean within float32 [min, max]; largest |bf16 - fp32| of one seed")
    for model in dict.fromkeys(r["model"] for r in runs):
        values = {}
        for precision in PRECISIONS:
            chosen = [r for r in runs if r["model"] == model and r["precision"] == precision]
            metric = [r["validation_mrr@10"] for r in chosen]
            values[precision] = metric
            verdict = ""
            if precision == "bfloat16":
                low, high = min(values["float32"]), max(values["float32"])
                inside = low <= statistics.mean(metric) <= high
                paired = max(abs(r["validation_mrr@10"] - by_seed_float32[r["seed"]]) for r in chosen)
                verdict = (f"{'yes' if inside else 'NO'} ({statistics.mean(metric):.4f} in [{low:.4f}, {high:.4f}]); "
                           f"{paired:.4f}")
            else:
                by_seed_float32 = {r["seed"]: r["validation_mrr@10"] for r in chosen}
            print(f"{model:13s} {precision:9s} {statistics.mean(metric):7.4f} {min(metric):7.4f} {max(metric):7.4f} "
                  f"{max(metric) - min(metric):7.4f} {statistics.mean(r['test_mrr@10'] for r in chosen):9.4f} "
                  f"{statistics.mean(r['cpu_s'] for r in chosen):9.0f}  {verdict}")
    total_cpu = sum(r["cpu_s"] for r in runs)
    total_wall = sum(r["wall_s"] for r in runs)
    print(f"{len(runs)} runs: {total_wall / 60:.1f} min wall, {total_cpu / 60:.1f} CPU-min; every run under {args.out}")


if __name__ == "__main__":
    main()
