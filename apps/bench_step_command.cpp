// nce bench step --model sig_predictor|text_encoder|minilm [--batch B] [--seq T] [--threads N] [--reps R]
//                 [--checkpoint-activations] [--device cpu|cuda] [--gemm-precision float32|bfloat16]
//                 [--init FOLDER] [--encode]
//
// Times one whole training step of one of the two models and prints one JSON line: the
// median and fastest step in milliseconds, samples per second (batch / median) and the
// process's peak resident memory. A step is what a training loop does per batch:
//
//   zero the gradients -> encode -> loss -> backward -> AdamW step
//
// The two configurations are those of the performance issue (benchmarks/README.md), and
// benchmarks/peer/step_peer.py builds the same two in PyTorch, so the two lines compare:
//
//   sig_predictor  features [B, T, 2048] -> d_model 512, 8 heads, feed-forward 2048,
//                  2 layers, dropout 0.1, out_dim 256; InfoNCE of the B predicted
//                  embeddings against B fixed target embeddings, learnable temperature.
//                  Defaults B = 64, T = 64.
//   text_encoder   token ids [B, T] from a vocabulary of 8000 -> d_model 128, 4 heads,
//                  feed-forward 512, 2 layers, dropout 0.1; symmetric InfoNCE over B
//                  queries and B passages at tau 0.05. Defaults B = 32, T = 32.
//   minilm         all-MiniLM-L6-v2's shapes (a "bert": vocabulary 30522, d_model 384, 12
//                  heads, feed-forward 1536, 6 layers, gelu, dropout 0.1, mean pooling,
//                  normalised): B pairs, 2B texts; InfoNCE of the B queries against the B
//                  passages at tau 0.05 (MultipleNegativesRankingLoss). Defaults B = 32,
//                  T = 128. Random weights, or the folder's with --init (a sentence-
//                  transformers folder of those shapes, e.g. scripts/pretrained.sh's).
//
// --encode times encoding instead of training: B texts (batch = B) in eval mode under
// no_grad, what `nce <app> index` does per batch; samples_per_s is then texts per second.
//
// Row r of every mask keeps T - (r mod ceil(T/2)) tokens (padding at the end), the same
// rule as the peer's. Inputs come from fixed seeds; dropout from a generator seeded 99.
// cpu_ms is the median CPU time of a step summed over the process's threads (wall-clock
// time on a busy machine includes waiting for a core; CPU time much less so).
// The first `--warmup` steps (default 1) fill the allocator's caches and create AdamW's
// moments and are left out of the timing. --gemm-precision bfloat16 runs the step's float32
// GEMMs on bfloat16-rounded operands with float32 accumulation (retrieval/settings/gemm_precision_option.h);
// the line says which precision ran.
//
// Memory. peak_allocated_mib is the most memory the engine's tensors held at once during the
// timed steps (CachingAllocator's peak of bytes in use, reset after the warmup), which the
// forward's saved activations dominate; peak_rss_mib is the whole process's high-water mark
// (the allocator's cache, the code, the inputs, and the warmup included).
// --checkpoint-activations recomputes each encoder layer in the backward instead of keeping
// its activations (nn/checkpoint_activations.h): the same loss and gradients bit for bit,
// a lower peak_allocated_mib, a slower step. The line says "checkpoint_activations": true.
//
// Under `mpirun -np K nce bench step ...` (distributed/) the B rows are the global batch:
// each process encodes its slice, the loss gathers the other processes' embeddings
// (distributed::infonce, distributed::infonce_symmetric) and the parameter gradients are
// summed over the processes before the AdamW step. Rank 0 prints the line, adding
// "processes" and "bytes_per_step" (what each process sends per step, counted by
// distributed/collectives.h; docs/scaling.md); samples_per_s counts the global batch.
//
// --device cuda: the model (Module::to) and the inputs (Tensor::to) move to the GPU before
// the warmup; a step ends when its loss is back on the host. One process only. Without a
// usable GPU the command stops first with one line (retrieval/settings/device_name.h). peak_allocated_mib
// counts host tensors only, so the line leaves it out on cuda.
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "apps/commands.h"
#include "apps/process_usage.h"
#include "retrieval/settings/device_name.h"
#include "retrieval/settings/gemm_precision_option.h"
#include "distributed/collectives.h"
#include "distributed/data_parallel.h"
#include "distributed/distributed_losses.h"
#include "distributed/sharding.h"
#include "distributed/world.h"
#include "engine/nce.h"
#include "losses/infonce.h"
#include "losses/infonce_symmetric.h"
#include "nn/checkpoint_activations.h"
#include "nn/model.h"
#include "nn/memory_estimate.h"
#include "nn/optimizer.h"
#include "nn/sentence_transformers_folder.h"

namespace nce::apps {
namespace {

struct BenchStepOptions {
    std::string model = "sig_predictor";
    int64_t batch = 0;  // 0: the model's default
    int64_t seq = 0;    // 0: the model's default
    int threads = 0;    // 0: NCE_NUM_THREADS (default all cores)
    int reps = 5;
    int warmup = 1;
    bool checkpoint_activations = false;
    std::string device = "cpu";
    std::string gemm_precision;  // "": the engine's setting
    std::string init;            // minilm: a sentence-transformers folder; "": random weights
    bool encode = false;         // time encoding (no gradient) instead of a training step
};

constexpr int64_t kSigInDim = 2048, kSigOutDim = 256, kTextVocabulary = 8000, kMiniLmVocabulary = 30522;

nn::ModelConfig model_config(const std::string& model, int64_t seq) {
    nn::ModelConfig config;
    config.kind = model;
    config.dropout = 0.1;
    config.num_layers = 2;
    if (model == "minilm") {
        config.kind = "bert";
        config.vocab_size = kMiniLmVocabulary;
        config.max_len = seq;
        config.max_position_embeddings = 512;
        config.type_vocab_size = 2;
        config.d_model = 384;
        config.nhead = 12;
        config.dim_feedforward = 1536;
        config.num_layers = 6;
        config.activation = "gelu";
        config.layer_norm_eps = 1e-12;
        config.attention_dropout = 0.1;
    } else if (model == "sig_predictor") {
        config.in_dim = kSigInDim;
        config.out_dim = kSigOutDim;
        config.d_model = 512;
        config.nhead = 8;
        config.dim_feedforward = 2048;
        config.learnable_temperature = true;
    } else {
        config.vocab_size = kTextVocabulary;
        config.max_len = seq;
        config.d_model = 128;
        config.nhead = 4;
        config.dim_feedforward = 512;
    }
    return config;
}

// [rows, seq] float 0/1: row r keeps its first seq - (r mod ceil(seq/2)) tokens.
Tensor padding_mask(int64_t rows, int64_t seq) {
    std::vector<double> mask(static_cast<size_t>(rows * seq), 0.0);
    const int64_t period = (seq + 1) / 2;
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t t = 0; t < seq - r % period; ++t) mask[static_cast<size_t>(r * seq + t)] = 1.0;
    return Tensor::from_vector(mask, {rows, seq}, Dtype::Float32);
}

Tensor random_token_ids(int64_t rows, int64_t seq, int64_t vocabulary, Generator& generator) {
    std::vector<int64_t> ids(static_cast<size_t>(rows * seq));
    for (int64_t& id : ids) id = 1 + generator.next_index(vocabulary - 1);
    return Tensor::from_indices(ids, {rows, seq});
}

// One training step's work on fixed inputs; returns the loss.
struct StepRunner {
    std::unique_ptr<nn::EmbeddingModel> model;
    std::unique_ptr<nn::AdamW> optimizer;
    Tensor query_input, query_mask, passage_input, passage_mask;  // passage_* for text_encoder only
    Var targets;                                                  // sig_predictor: fixed unit rows [B, out_dim]
    Generator dropout{99};
    bool pairs_one_way = false;  // minilm: infonce(q, p) rather than the symmetric loss

    // Encoding only: the queries in eval mode, no graph; returns a number that depends on them.
    double encode() {
        NoGradGuard no_grad;
        Var embeddings = model->encode(query_input, query_mask, nullptr);  // [B, d]
        return embeddings.value().rows(0, 1).to(Device::CPU).at(0);
    }

    double step() {
        optimizer->zero_grad();
        Var loss;
        Var queries = model->encode(query_input, query_mask, &dropout);  // [B, d]
        const bool several_processes = distributed::world().size() > 1;  // under mpirun: this process's rows
        if (targets.defined()) {
            loss = several_processes ? distributed::infonce(queries, targets, Var(), *model->log_tau())
                                     : losses::infonce(queries, targets, Var(), *model->log_tau());
        } else {
            Var passages = model->encode(passage_input, passage_mask, &dropout);  // [B, d]
            if (pairs_one_way)
                loss = several_processes ? distributed::infonce(queries, passages, Var(), Var(), 0.05)
                                         : losses::infonce(queries, passages, Var(), Var(), 0.05);
            else
                loss = several_processes ? distributed::infonce_symmetric(queries, passages, Var(), Var(), 0.05)
                                         : losses::infonce_symmetric(queries, passages, Var(), Var(), 0.05);
        }
        loss.backward();
        distributed::all_reduce_gradients(*model);  // the sum over processes; nothing with one
        optimizer->step();
        return several_processes ? distributed::global_loss(loss) : loss.value().to(Device::CPU).item();
    }
};

StepRunner make_runner(const BenchStepOptions& options, int64_t batch, int64_t seq, Device device) {
    const std::string& model_name = options.model;
    StepRunner runner;
    Generator init(7), data(11);
    if (!options.init.empty()) {
        runner.model = nn::load_sentence_transformers(options.init).model;
        const nn::ModelConfig& loaded = runner.model->config();
        NCE_CHECK(loaded.vocab_size == kMiniLmVocabulary && loaded.d_model == 384 && loaded.num_layers == 6,
                  "bench step: --init {} is not all-MiniLM-L6-v2's shape (vocabulary {}, width {}, {} layers; "
                  "expected 30522, 384, 6)",
                  options.init, loaded.vocab_size, loaded.d_model, loaded.num_layers);
        NCE_CHECK(seq <= loaded.max_len, "bench step: --seq {} is longer than the model's max_seq_length {}", seq,
                  loaded.max_len);
    }
    const nn::ModelConfig config = options.init.empty() ? model_config(model_name, seq) : runner.model->config();
    if (device == Device::CPU && !options.encode)  // a training step on the host, checked before it allocates
        nn::check_training_memory(config, {.query_rows = batch, .query_tokens = seq,
                                           .passage_rows = model_name == "sig_predictor" ? 0 : batch,
                                           .passage_tokens = seq,
                                           .checkpoint_activations = options.checkpoint_activations},
                                  "lower --batch or --seq, or add --checkpoint-activations");
    if (options.init.empty()) runner.model = nn::make_model(config, init, Dtype::Float32);
    runner.pairs_one_way = model_name == "minilm";
    runner.model->train(!options.encode);
    runner.model->to(device);  // before the optimizer takes the parameters' values
    nn::set_checkpoint_activations(*runner.model, options.checkpoint_activations);
    runner.optimizer = std::make_unique<nn::AdamW>(runner.model->parameters(), nn::AdamWOptions{.learning_rate = 1e-4});
    runner.query_mask = padding_mask(batch, seq);
    if (model_name == "sig_predictor") {
        runner.query_input = data.normal({batch, seq, kSigInDim}, Dtype::Float32);
        Tensor targets = data.normal({batch, kSigOutDim}, Dtype::Float32);
        runner.targets = Var(div(targets, sqrt(sum(mul(targets, targets), 1, true))));  // unit rows
    } else {
        const int64_t vocabulary = model_name == "minilm" ? kMiniLmVocabulary : kTextVocabulary;
        runner.query_input = random_token_ids(batch, seq, vocabulary, data);
        runner.passage_input = random_token_ids(batch, seq, vocabulary, data);
        runner.passage_mask = runner.query_mask;
    }
    runner.query_input = runner.query_input.to(device);
    runner.query_mask = runner.query_mask.to(device);
    if (runner.targets.defined()) runner.targets = Var(runner.targets.value().to(device));
    if (runner.passage_input.defined()) {
        runner.passage_input = runner.passage_input.to(device);
        runner.passage_mask = runner.passage_mask.to(device);
    }
    if (distributed::world().size() > 1) {
        // Rank 0's weights everywhere (made from the same seed, but this is the rule), and
        // this process's slice of the global batch.
        distributed::broadcast_parameters(*runner.model);
        runner.query_input = distributed::local_slice(runner.query_input);
        runner.query_mask = distributed::local_slice(runner.query_mask);
        if (runner.targets.defined()) runner.targets = Var(distributed::local_slice(runner.targets.value()));
        if (runner.passage_input.defined()) {
            runner.passage_input = distributed::local_slice(runner.passage_input);
            runner.passage_mask = distributed::local_slice(runner.passage_mask);
        }
    }
    return runner;
}

double median_of(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    const size_t middle = values.size() / 2;
    return values.size() % 2 ? values[middle] : 0.5 * (values[middle - 1] + values[middle]);
}

int run(const BenchStepOptions& options) {
    const bool sig = options.model == "sig_predictor", minilm = options.model == "minilm";
    NCE_CHECK(options.init.empty() || minilm, "bench step: --init applies to --model minilm only");
    const int64_t batch = options.batch > 0 ? options.batch : (sig ? 64 : 32);
    const int64_t seq = options.seq > 0 ? options.seq : (sig ? 64 : minilm ? 128 : 32);
    NCE_CHECK(!minilm || seq <= 512, "bench step: --seq {} is above minilm's 512 positions", seq);
    NCE_CHECK(!options.encode || distributed::world().size() == 1, "bench step: --encode runs in one process");
    NCE_CHECK(batch >= 2, "bench step: --batch {} is too small; InfoNCE needs at least 2 rows", batch);
    NCE_CHECK(batch >= distributed::world().size(),
              "bench step: --batch {} is smaller than the {} processes; give each at least one row", batch,
              distributed::world().size());
    const Device device = retrieval::require_device(options.device);
    NCE_CHECK(device == Device::CPU || distributed::world().size() == 1,
              "bench step: --device cuda runs in one process; start it without mpirun");
    if (options.threads > 0) set_num_threads(options.threads);
    retrieval::apply_gemm_precision(options.gemm_precision, device);

    StepRunner runner = make_runner(options, batch, seq, device);
    auto once = [&] { return options.encode ? runner.encode() : runner.step(); };
    double loss = 0;
    for (int w = 0; w < options.warmup; ++w) loss = once();
    distributed::reset_communication_stats();
    CachingAllocator::host().reset_peak();  // the timed steps' peak, not the setup's
    const AllocatorStats before = CachingAllocator::host().stats();
    std::vector<double> milliseconds, cpu_milliseconds;
    for (int r = 0; r < options.reps; ++r) {
        const double cpu_start = process_cpu_milliseconds();
        auto start = std::chrono::steady_clock::now();
        loss = once();
        milliseconds.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
        cpu_milliseconds.push_back(process_cpu_milliseconds() - cpu_start);
    }
    const AllocatorStats after = CachingAllocator::host().stats();
    NCE_CHECK(std::isfinite(loss), "bench step: the loss became {}; the benchmark's inputs or the build are broken", loss);
    std::vector<double> sorted = milliseconds;
    std::sort(sorted.begin(), sorted.end());
    const double median = median_of(milliseconds);

    nlohmann::ordered_json line;
    line["bench"] = "step";
    line["side"] = "nce";
    line["name"] = options.model;
    line["model"] = options.model;
    line["batch"] = batch;
    line["seq"] = seq;
    line["dtype"] = "float32";
    line["device"] = options.device;
    line["threads"] = num_threads();
    line["reps"] = options.reps;
    line["median_ms"] = median;
    line["min_ms"] = sorted.front();
    line["samples_per_s"] = static_cast<double>(batch) / (median / 1000.0);
    line["checkpoint_activations"] = options.checkpoint_activations;
    line["mode"] = options.encode ? "encode" : "train";
    line["weights"] = options.init.empty() ? "random" : options.init;
    if (device == Device::CPU)
        line["peak_allocated_mib"] =
            static_cast<double>(CachingAllocator::host().stats().peak_bytes_in_use) / (1024.0 * 1024.0);
    line["peak_rss_mib"] = peak_resident_mebibytes();
    // Host buffers the timed steps took fresh from the system (0 in the steady state: each
    // step reuses the blocks the last one released).
    line["allocator_misses_per_step"] =
        static_cast<double>((after.allocations - before.allocations) - (after.cache_hits - before.cache_hits)) /
        options.reps;
    line["blas_core"] = blas_core_name();
    line["blas_core_mismatch"] = blas_core_mismatch();  // "" when OpenBLAS's kernels are as wide as the CPU
    retrieval::add_gemm_precision_fields(line);
    line["cpu_ms"] = median_of(cpu_milliseconds);
    line["last_loss"] = loss;
    line["times_ms"] = milliseconds;
    if (distributed::world().size() > 1) {
        line["processes"] = distributed::world().size();
        line["bytes_per_step"] = distributed::communication_stats().total().ring_bytes / options.reps;
    }
    fmt::print("{}\n", line.dump());
    return 0;
}

}  // namespace

void add_bench_step_command(CLI::App& bench, int& exit_code) {
    auto options = std::make_shared<BenchStepOptions>();
    CLI::App* command = bench.add_subcommand("step", "Time one training step (encode, loss, backward, AdamW) of a model");
    command->add_option("--model", options->model, "sig_predictor, text_encoder or minilm (all-MiniLM-L6-v2's shapes)")
        ->check(CLI::IsMember({"sig_predictor", "text_encoder", "minilm"}));
    // Bounded, so batch x seq (at most 2^20 x 4096 = 2^32 tokens) never wraps before a buffer is sized.
    command->add_option("--batch", options->batch,
                        "sequences per step, pairs for minilm (default 64 for sig_predictor, 32 otherwise)")
        ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
    command->add_option("--seq", options->seq,
                        "tokens per sequence (default 64 for sig_predictor, 32 for text_encoder, 128 for minilm)")
        ->check(CLI::Range(1, 4096));
    command->add_option("--threads", options->threads, "the engine's threads, for its loops and GEMMs (default NCE_NUM_THREADS)")
        ->check(CLI::Range(1, 4096));
    command->add_option("--reps", options->reps, "timed steps (the median is reported)")->check(CLI::Range(1, 10000));
    command->add_option("--warmup", options->warmup, "untimed steps first")->check(CLI::Range(0, 10000));
    command->add_flag("--checkpoint-activations", options->checkpoint_activations,
                      "recompute each encoder layer in the backward instead of keeping its activations");
    command->add_option("--device", options->device, "cpu (default) or cuda (needs a GPU and a build with CUDA)");
    command->add_option("--gemm-precision", options->gemm_precision, retrieval::kGemmPrecisionHelp);
    command->add_option("--init", options->init, "minilm: start from this sentence-transformers folder's weights");
    command->add_flag("--encode", options->encode, "time encoding B texts without gradients instead of a training step");
    command->callback([options, &exit_code] { exit_code = run(*options); });
}

}  // namespace nce::apps
