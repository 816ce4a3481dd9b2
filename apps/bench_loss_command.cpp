// nce bench loss NAME --n N --d D [--neg M] [--threads T] [--reps R] [--warmup W]
//                 [--tau TAU] [--block-rows B] [--dtype float32|float64] [--device cpu|cuda]
//                 [--gemm-precision float32|bfloat16]
//
// Times the forward and backward of one loss and prints one JSON line: the median and
// fastest run in milliseconds and the process's peak resident memory (getrusage), so that
// benchmarks/peer/loss_peer.py (PyTorch, same arguments, same line) compares one to one.
//
// infonce and infonce_symmetric get q, p [N, d] (and [M, d] negatives with --neg) of
// random unit rows and a fixed temperature; for them the line also gives the GEMM rate,
// counting the three N·(N+M)·d products any InfoNCE forward + backward needs (the logits,
// dq and dC: 6·N·(N+M)·d flops). Any other loss of the catalogue runs on its own example
// problem (LossDefinition::example) of N rows of dimension d.
//
// One run: fresh leaves, the loss, backward(). The first `--warmup` runs (default 1) fill
// the caching allocator and are left out of the timing. Inputs come from seed 1. Besides
// the wall clock, cpu_ms gives the process's CPU time per run (all threads).
//
// --device cuda: the inputs are made on the CPU and moved to the GPU (Tensor::to); a run
// ends when the loss's value is back on the host, so the timing includes the GPU's work.
// The InfoNCE family runs there as the same row-block sweep in engine ops
// (losses/infonce_rows.h; --block-rows bounds its memory there too), and the line adds
// device_peak_mib, the most device memory its tensors held at once; a loss whose code still
// reads tensors on the host stops with the engine's one-line error.
// Without a usable GPU the command stops first with one line (retrieval/settings/device_name.h).
//
// --gemm-precision bfloat16: the float32 GEMMs round their operands to bfloat16 and
// accumulate in float32 (retrieval/settings/gemm_precision_option.h); the line says which precision ran
// and oneDNN's ISA. It changes float32 GEMMs only, so --dtype float64 with it is an error.
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "apps/commands.h"
#include "apps/process_usage.h"
#include "retrieval/settings/device_name.h"
#include "retrieval/settings/gemm_precision_option.h"
#include "engine/nce.h"
#include "losses/losses.h"

namespace nce::apps {
namespace {

struct BenchLossOptions {
    std::string name;
    int64_t n = 4096;
    int64_t d = 384;
    int64_t negatives = 0;
    int threads = 0;  // 0: NCE_NUM_THREADS (default all cores)
    int reps = 5;
    int warmup = 1;
    double tau = 0.05;
    int64_t block_rows = 0;  // 0: automatic
    std::string dtype = "float32";
    std::string device = "cpu";
    std::string gemm_precision;  // "": the engine's setting
};

// [rows, d] standard normal rows divided by their length, drawn directly in `dtype` (no
// float64 copy of a large input inflates the peak memory).
Tensor random_unit_rows(Generator& generator, int64_t rows, int64_t d, Dtype dtype) {
    Tensor x = generator.normal({rows, d}, dtype);
    return x / sqrt(sum(x * x, 1, /*keepdim=*/true));
}

// One forward + backward, given fresh leaves each time. Returns the loss.
using LossRun = std::function<double()>;

LossRun infonce_run(const BenchLossOptions& options, Dtype dtype, Device device) {
    Generator generator(1);
    Tensor q = random_unit_rows(generator, options.n, options.d, dtype).to(device);
    Tensor p = random_unit_rows(generator, options.n, options.d, dtype).to(device);
    Tensor negatives =
        options.negatives > 0 ? random_unit_rows(generator, options.negatives, options.d, dtype).to(device) : Tensor();
    bool symmetric = options.name == "infonce_symmetric";
    losses::LogitBlocking blocking{options.block_rows};
    return [=] {
        Var q_leaf(q, true), p_leaf(p, true);
        Var negatives_leaf = negatives.defined() ? Var(negatives, true) : Var();
        Var loss = symmetric ? losses::infonce_symmetric(q_leaf, p_leaf, negatives_leaf, Var(), options.tau, blocking)
                             : losses::infonce(q_leaf, p_leaf, negatives_leaf, Var(), options.tau, blocking);
        loss.backward();
        return loss.value().to(Device::CPU).item();
    };
}

LossRun catalogue_run(const BenchLossOptions& options, Dtype dtype, Device device) {
    const losses::LossDefinition& definition = losses::find_loss(options.name);
    Generator generator(1);
    std::map<std::string, Tensor> inputs = definition.example(generator, options.n, options.d);
    for (auto& [name, value] : inputs)
        if (is_floating(value.dtype()) && name != "qid") value = value.to(dtype);
    for (auto& [name, value] : inputs) value = value.to(device);
    return [&definition, inputs] {
        losses::LossArguments arguments = losses::make_arguments(definition, inputs, {});
        Var loss = definition.compute(arguments);
        if (loss.requires_grad()) loss.backward();
        return loss.value().to(Device::CPU).item();
    };
}

int run(const BenchLossOptions& options) {
    NCE_CHECK(!options.name.empty(), "bench loss: name a loss, e.g. nce bench loss infonce --n 4096 --d 384");
    losses::find_loss(options.name);  // an unknown name is one line listing the known ones
    NCE_CHECK(options.n >= 2, "bench loss: --n {} is too small; the InfoNCE family needs at least 2 rows", options.n);
    NCE_CHECK(options.dtype == "float32" || options.dtype == "float64",
              "bench loss: --dtype must be float32 or float64, got '{}'", options.dtype);
    Dtype dtype = options.dtype == "float32" ? Dtype::Float32 : Dtype::Float64;
    const Device device = retrieval::require_device(options.device);
    if (options.threads > 0) set_num_threads(options.threads);
    NCE_CHECK(options.gemm_precision != "bfloat16" || dtype == Dtype::Float32,
              "bench loss: --gemm-precision bfloat16 changes float32 GEMMs only; use --dtype float32");
    retrieval::apply_gemm_precision(options.gemm_precision, device);

    bool infonce_family = options.name == "infonce" || options.name == "infonce_symmetric";
    NCE_CHECK(infonce_family || (options.negatives == 0 && options.block_rows == 0),
              "bench loss: --neg and --block-rows apply to infonce and infonce_symmetric only, not {}", options.name);
    LossRun run_once = infonce_family ? infonce_run(options, dtype, device) : catalogue_run(options, dtype, device);

    double loss = 0;
    for (int w = 0; w < options.warmup; ++w) loss = run_once();
    std::vector<double> milliseconds, cpu_milliseconds;
    for (int r = 0; r < options.reps; ++r) {
        double cpu_start = process_cpu_milliseconds();
        auto start = std::chrono::steady_clock::now();
        loss = run_once();
        milliseconds.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
        cpu_milliseconds.push_back(process_cpu_milliseconds() - cpu_start);
    }
    NCE_CHECK(std::isfinite(loss), "bench loss: the loss came out {}; the inputs or the build are broken", loss);
    auto median_of = [](std::vector<double> values) {
        std::sort(values.begin(), values.end());
        size_t middle = values.size() / 2;
        return values.size() % 2 ? values[middle] : 0.5 * (values[middle - 1] + values[middle]);
    };
    double median = median_of(milliseconds);

    nlohmann::ordered_json line;
    line["bench"] = "loss";
    line["side"] = "nce";
    line["name"] = options.name;
    line["n"] = options.n;
    line["d"] = options.d;
    line["neg"] = options.negatives;
    line["dtype"] = options.dtype;
    line["device"] = options.device;
    line["threads"] = num_threads();
    line["reps"] = options.reps;
    line["median_ms"] = median;
    line["min_ms"] = *std::min_element(milliseconds.begin(), milliseconds.end());
    line["cpu_ms"] = median_of(cpu_milliseconds);
    if (infonce_family) {
        double flops = 6.0 * double(options.n) * double(options.n + options.negatives) * double(options.d);
        line["gemm_gflop"] = flops / 1e9;
        line["gemm_gflop_per_s"] = flops / 1e9 / (median / 1000.0);
    }
    if (infonce_family && device == Device::CPU) {  // the CPU's blocked path; cuda runs the reference path
        line["block_rows"] = losses::logit_block_rows(losses::LogitBlocking{options.block_rows}, options.n,
                                                      options.n + options.negatives, dtype);
        bool kept = options.name == "infonce_symmetric" &&
                    losses::symmetric_keeps_logits(losses::LogitBlocking{options.block_rows}, options.n,
                                                   options.n + options.negatives, dtype);
        line["whole_logits_kept"] = kept;
    }
    line["peak_rss_mib"] = peak_resident_mebibytes();
    if (device != Device::CPU)
        line["device_peak_mib"] = static_cast<double>(backend_for(device).memory_stats().peak_bytes_in_use) / (1 << 20);
    line["blas_core"] = blas_core_name();
    line["blas_core_mismatch"] = blas_core_mismatch();  // "" when OpenBLAS's kernels are as wide as the CPU
    retrieval::add_gemm_precision_fields(line);
    line["loss"] = loss;
    line["times_ms"] = milliseconds;
    fmt::print("{}\n", line.dump());
    return 0;
}

}  // namespace

void add_bench_loss_command(CLI::App& bench, int& exit_code) {
    auto options = std::make_shared<BenchLossOptions>();
    CLI::App* command = bench.add_subcommand("loss", "Time a loss's forward + backward; prints one JSON line");
    command->add_option("name", options->name, "the loss: infonce, infonce_symmetric, or any of nce loss --list")
        ->required();
    command->add_option("--n", options->n, "rows N of q and p (default 4096)")->check(CLI::Range(int64_t{2}, int64_t{1} << 24));
    command->add_option("--d", options->d, "embedding dimension d (default 384)")->check(CLI::Range(1, 65536));
    command->add_option("--neg", options->negatives, "extra negatives M for infonce / infonce_symmetric (default 0)")
        ->check(CLI::Range(int64_t{0}, int64_t{1} << 24));
    command->add_option("--threads", options->threads, "the engine's threads, for its loops and GEMMs (default NCE_NUM_THREADS)")
        ->check(CLI::Range(1, 4096));
    command->add_option("--reps", options->reps, "timed runs (the median is reported)")->check(CLI::Range(1, 10000));
    command->add_option("--warmup", options->warmup, "untimed runs first (default 1)")->check(CLI::Range(0, 10000));
    command->add_option("--tau", options->tau, "temperature (default 0.05)")->check(CLI::PositiveNumber);
    command->add_option("--block-rows", options->block_rows,
                        "rows of logits formed at a time (default 0: automatic); any value bounds the memory")
        ->check(CLI::Range(int64_t{0}, int64_t{1} << 24));
    command->add_option("--dtype", options->dtype, "float32 (default) or float64");
    command->add_option("--device", options->device, "cpu (default) or cuda (needs a GPU and a build with CUDA)");
    command->add_option("--gemm-precision", options->gemm_precision, retrieval::kGemmPrecisionHelp);
    command->callback([options, &exit_code] { exit_code = run(*options); });
}

}  // namespace nce::apps
