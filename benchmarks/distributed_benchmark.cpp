// Data-parallel training throughput, and the bytes each step sends.
//
// Every rank trains a replica of a small text encoder (float32) with the distributed
// symmetric InfoNCE on its slice of a fixed global batch of B query-passage pairs: encode
// its B/K queries and passages, gather both sides' embeddings, its loss rows against all
// B candidates, backward (the gather's reduce-scatter), all-reduce of the parameter
// gradients, one AdamW step. The global batch stays the same for every K, so the figures
// say how much faster K processes train on the same data (strong scaling).
//
// Reported by rank 0: the median step time over the timed steps (after one warm-up step),
// global samples per second, the CPU time a step took summed over the processes, and, per
// step and per rank, the calls, payload bytes, ring bytes (distributed/collectives.h) and
// wall time of each collective. docs/scaling.md works out from these bytes what larger
// worlds send.
//
// Usage: mpirun -np K distributed_benchmark [--batch 256] [--length 32] [--steps 5]
//        [--d-model 128] [--layers 2] [--mini-batch 0 (0: no GradCache)]
// Threads per process come from NCE_NUM_THREADS; benchmarks/run_distributed.sh runs K = 1
// with 2 threads and K = 2 with 1 thread each, so both use the machine's 2 cores.
#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "distributed/collectives.h"
#include "distributed/data_parallel.h"
#include "distributed/distributed_losses.h"
#include "distributed/sharding.h"
#include "distributed/world.h"
#include "nn/grad_cache.h"
#include "nn/model.h"
#include "nn/optimizer.h"

namespace {

using namespace nce;
namespace dist = nce::distributed;

struct Settings {
    int64_t batch = 256;
    int64_t length = 32;
    int steps = 5;
    int64_t d_model = 128;
    int64_t layers = 2;
    int64_t mini_batch = 0;
};

nn::ModelConfig text_encoder(const Settings& settings) {
    nn::ModelConfig config;
    config.kind = "text_encoder";
    config.vocab_size = 8000;
    config.max_len = settings.length;
    config.d_model = settings.d_model;
    config.nhead = 4;
    config.dim_feedforward = 4 * settings.d_model;
    config.num_layers = settings.layers;
    config.dropout = 0.1;
    return config;
}

// Token ids in [1, vocab) and masks keeping between length/2 and length tokens per row.
std::pair<Tensor, Tensor> random_tokens(int64_t rows, int64_t length, Generator& generator) {
    std::vector<int64_t> ids(static_cast<size_t>(rows * length)), mask(ids.size(), 0);
    for (int64_t& id : ids) id = 1 + generator.next_index(7999);
    for (int64_t r = 0; r < rows; ++r) {
        int64_t tokens = length / 2 + generator.next_index(length - length / 2 + 1);
        for (int64_t t = 0; t < tokens; ++t) mask[static_cast<size_t>(r * length + t)] = 1;
    }
    return {Tensor::from_indices(ids, {rows, length}), Tensor::from_indices(mask, {rows, length})};
}

// CPU time of this process, all its threads, in seconds: on a busy machine the wall time of a
// step includes waiting for a core; the CPU time says how much work the step was.
double process_cpu_seconds() {
    timespec now{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
    return static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec);
}

double median(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    return values[values.size() / 2];
}

double load_average() {
    double one_minute = 0;
    if (std::FILE* file = std::fopen("/proc/loadavg", "r")) {
        if (std::fscanf(file, "%lf", &one_minute) != 1) one_minute = 0;
        std::fclose(file);
    }
    return one_minute;
}

void print_collective(const char* name, const dist::CollectiveBytes& bytes, int steps) {
    fmt::print("  {:<15} {:>6.1f} {:>14.0f} {:>14.0f} {:>12.2f}\n", name, static_cast<double>(bytes.calls) / steps,
               static_cast<double>(bytes.payload_bytes) / steps, static_cast<double>(bytes.ring_bytes) / steps,
               1e3 * bytes.seconds / steps);
}

void run(const Settings& settings) {
    const dist::World& world = dist::world();
    Generator init(1);
    auto model = nn::make_model(text_encoder(settings), init, Dtype::Float32);
    dist::broadcast_parameters(*model);
    nn::AdamW optimizer(model->parameters(), nn::AdamWOptions{.learning_rate = 1e-4});
    int64_t parameter_count = 0;
    for (Var* parameter : model->parameters()) parameter_count += parameter->value().numel();
    Generator dropout(100 + static_cast<uint64_t>(world.rank()));

    auto loss = [](const Var& q, const Var& p, const Var& log_tau) {
        return dist::infonce_symmetric(q, p, Var(), log_tau, 0.05);
    };
    std::vector<double> step_seconds, step_cpu_seconds;
    for (int step = 0; step <= settings.steps; ++step) {  // step 0 warms up
        Generator data(1000 + static_cast<uint64_t>(step));  // the same global batch on every rank
        auto [query_ids, query_mask] = random_tokens(settings.batch, settings.length, data);
        auto [passage_ids, passage_mask] = random_tokens(settings.batch, settings.length, data);
        nn::PairBatch local{dist::local_slice(query_ids), dist::local_slice(query_mask), dist::local_slice(passage_ids),
                            dist::local_slice(passage_mask)};
        dist::barrier();
        if (step == 1) dist::reset_communication_stats();
        auto start = std::chrono::steady_clock::now();
        double cpu_start = process_cpu_seconds();

        optimizer.zero_grad();
        if (settings.mini_batch > 0) {
            nn::grad_cache_step(*model, *model, local, loss, settings.mini_batch, dropout);
        } else {
            Var q = model->encode(local.query_input, local.query_mask, &dropout);
            Var p = model->encode(local.passage_input, local.passage_mask, &dropout);
            loss(q, p, Var()).backward();
        }
        dist::all_reduce_gradients(*model);
        optimizer.step();

        dist::barrier();
        double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (step > 0) {
            step_seconds.push_back(seconds);
            step_cpu_seconds.push_back(process_cpu_seconds() - cpu_start);
        }
    }

    // The steps' bytes, before the CPU times are summed over the ranks (a collective too).
    const dist::CommunicationStats stats = dist::communication_stats();
    Tensor cpu_seconds = Tensor::from_vector(step_cpu_seconds, {settings.steps}, Dtype::Float64);
    dist::all_reduce_sum_inplace(cpu_seconds);
    step_cpu_seconds = cpu_seconds.to_vector();
    if (!world.is_main()) return;
    double step_time = median(step_seconds);
    fmt::print("distributed_benchmark: {} process{}, {} thread{} each, global batch {} pairs, length {}, d_model {}, "
               "{} layers, {} parameters, {}\n",
               world.size(), world.size() == 1 ? "" : "es", num_threads(), num_threads() == 1 ? "" : "s",
               settings.batch, settings.length, settings.d_model, settings.layers, parameter_count,
               settings.mini_batch > 0 ? fmt::format("GradCache mini-batches of {}", settings.mini_batch)
                                       : std::string("no GradCache"));
    fmt::print("step: median {:.1f} ms over {} steps; {:.1f} pairs/s; CPU time of all processes {:.1f} ms per step "
               "(load average {:.1f})\n",
               1e3 * step_time, settings.steps, static_cast<double>(settings.batch) / step_time,
               1e3 * median(step_cpu_seconds), load_average());
    fmt::print("per step, rank 0:  {:<15} {:>6} {:>14} {:>14} {:>12}\n", "", "calls", "payload bytes", "ring bytes",
               "ms");
    print_collective("all-gather", stats.all_gather, settings.steps);
    print_collective("reduce-scatter", stats.reduce_scatter, settings.steps);
    print_collective("all-reduce", stats.all_reduce, settings.steps);
    print_collective("total", stats.total(), settings.steps);
}

}  // namespace

int main(int argc, char** argv) {
    dist::WorldSession session(argc, argv);
    Settings settings;
    CLI::App app{"Data-parallel training throughput and bytes per step (run it under mpirun -np K)"};
    app.add_option("--batch", settings.batch, "global batch: query-passage pairs per step")->check(CLI::PositiveNumber);
    app.add_option("--length", settings.length, "tokens per text")->check(CLI::Range(2, 512));
    app.add_option("--steps", settings.steps, "timed steps, after one warm-up step")->check(CLI::PositiveNumber);
    app.add_option("--d-model", settings.d_model, "model width (a multiple of 4)")->check(CLI::PositiveNumber);
    app.add_option("--layers", settings.layers, "encoder layers")->check(CLI::PositiveNumber);
    app.add_option("--mini-batch", settings.mini_batch, "GradCache mini-batch rows; 0: no GradCache")
        ->check(CLI::NonNegativeNumber);
    try {
        app.parse(argc, argv);
        run(settings);
    } catch (const CLI::ParseError& error) {
        return app.exit(error);
    } catch (const std::exception& error) {
        dist::abort_world(error.what());
    }
    return 0;
}
