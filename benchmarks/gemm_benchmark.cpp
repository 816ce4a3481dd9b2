// GEMM throughput: the engine's Tensor-level matmul (its output split over the engine's
// threads, each piece one single-threaded OpenBLAS call: engine/blas.h) against one
// cblas_*gemm call on the same inputs threaded by OpenBLAS itself, so the table shows what
// the engine's layer and its way of threading cost or gain over OpenBLAS's own. It also
// measures the machine's fp32 FMA peak, the ceiling both are held against.
//
// Shapes: a square 1024^3 product, and the similarity matrix of a contrastive batch,
// q [4096, 384] · p [4096, 384]^T -> [4096, 4096] (4096 embeddings of width 384 against
// each other), in float32; the square product also in float64.
//
// Each measurement: a few warm-up runs (OpenBLAS starts its threads, the engine's caching
// allocator fills), then the median of several timed runs. GFLOP/s counts 2·m·n·k flops.
//
// Usage: gemm_benchmark [--repeats N]     threads come from NCE_NUM_THREADS (default: all cores)
#include <cblas.h>
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#if defined(__AVX512F__) || defined(__AVX2__)
#include <immintrin.h>
#endif

#include "engine/nce.h"

namespace {

using nce::Dtype;
using nce::Tensor;
using nce::Transpose;

constexpr int kWarmupRuns = 2;

// Median seconds of one call of `engine` and of `cblas`. The two are timed alternately,
// run by run, so a burst of load from other processes hits both sides alike.
struct Timings {
    double engine_seconds, cblas_seconds;
};
Timings median_seconds(const std::function<void()>& engine, const std::function<void()>& cblas, int repeats) {
    auto time_once = [](const std::function<void()>& work) {
        auto start = std::chrono::steady_clock::now();
        work();
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    };
    for (int i = 0; i < kWarmupRuns; ++i) {
        engine();
        cblas();
    }
    std::vector<double> engine_seconds, cblas_seconds;
    for (int i = 0; i < repeats; ++i) {
        engine_seconds.push_back(time_once(engine));
        cblas_seconds.push_back(time_once(cblas));
    }
    auto median = [](std::vector<double>& values) {
        std::sort(values.begin(), values.end());
        return values[values.size() / 2];
    };
    return {median(engine_seconds), median(cblas_seconds)};
}

// One product C [m, n] = A [m, k] · B, with B given as [k, n] or, when
// `second_transposed`, as [n, k] (C = A · B^T).
struct GemmCase {
    std::string description;
    int64_t m, n, k;
    bool second_transposed;
    Dtype dtype;
};

// C = A · op(B) straight through CBLAS, row-major, into a preallocated C.
void cblas_product(const GemmCase& c, const Tensor& a, const Tensor& b, Tensor& out) {
    auto op_b = c.second_transposed ? CblasTrans : CblasNoTrans;
    int m = static_cast<int>(c.m), n = static_cast<int>(c.n), k = static_cast<int>(c.k);
    int ldb = c.second_transposed ? k : n;
    openblas_set_num_threads(nce::num_threads());  // OpenBLAS's own threads, for this call only
    if (c.dtype == Dtype::Float32)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, op_b, m, n, k, 1.0f, a.data<float>(), k, b.data<float>(), ldb, 0.0f,
                    out.data<float>(), n);
    else
        cblas_dgemm(CblasRowMajor, CblasNoTrans, op_b, m, n, k, 1.0, a.data<double>(), k, b.data<double>(), ldb, 0.0,
                    out.data<double>(), n);
    openblas_set_num_threads(1);  // back to the engine's setting
}

void run_case(const GemmCase& c, int repeats, nce::Generator& generator) {
    Tensor a = generator.uniform({c.m, c.k}, c.dtype, -1.0, 1.0);
    nce::Shape b_shape = c.second_transposed ? nce::Shape{c.n, c.k} : nce::Shape{c.k, c.n};
    Tensor b = generator.uniform(b_shape, c.dtype, -1.0, 1.0);
    Transpose transpose = c.second_transposed ? Transpose::Second : Transpose::None;

    Tensor engine_result;
    Tensor cblas_result = Tensor::empty({c.m, c.n}, c.dtype);
    auto [engine_seconds, cblas_seconds] =
        median_seconds([&] { engine_result = nce::matmul(a, b, transpose); },
                       [&] { cblas_product(c, a, b, cblas_result); }, repeats);

    double flops = 2.0 * static_cast<double>(c.m) * static_cast<double>(c.n) * static_cast<double>(c.k);
    double engine_gflops = flops / engine_seconds / 1e9, cblas_gflops = flops / cblas_seconds / 1e9;
    // Both sides run the same OpenBLAS kernel, so the results should agree to rounding.
    double difference = nce::max_abs_difference(engine_result, cblas_result);
    fmt::print("{:<34} {:<8} {:>10.1f} {:>10.1f} {:>10.1f} {:>10.1f} {:>8.3f} {:>12.1e}\n", c.description,
               nce::dtype_name(c.dtype), engine_seconds * 1e3, cblas_seconds * 1e3, engine_gflops, cblas_gflops,
               engine_gflops / cblas_gflops, difference);
}

// The fp32 peak this machine reaches, measured rather than taken from a data sheet: every
// thread runs fused multiply-adds on 12 independent vector registers (enough to keep two FMA
// ports busy through the instruction's latency), with no memory traffic; GFLOP/s counts 2 per
// lane per FMA. Under AVX-512 the cores run at their AVX-512 clock, as they do in a GEMM.
// measured_fma_peak_gflops returns 0 when the build has neither AVX-512 nor AVX2.
#if defined(__AVX512F__)
using FmaVector = __m512;
constexpr int kFmaLanes = 16;
inline FmaVector fma_broadcast(float x) { return _mm512_set1_ps(x); }
inline FmaVector fma_step(FmaVector a, FmaVector b, FmaVector c) { return _mm512_fmadd_ps(a, b, c); }
#elif defined(__AVX2__)
using FmaVector = __m256;
constexpr int kFmaLanes = 8;
inline FmaVector fma_broadcast(float x) { return _mm256_set1_ps(x); }
inline FmaVector fma_step(FmaVector a, FmaVector b, FmaVector c) { return _mm256_fmadd_ps(a, b, c); }
#endif

#if defined(__AVX512F__) || defined(__AVX2__)
constexpr int kFmaRegisters = 12;

// `iterations` rounds of one FMA on each register; returns their sum so the work stays.
__attribute__((noinline)) float fma_rounds(long iterations) {
    FmaVector accumulators[kFmaRegisters];
    for (int r = 0; r < kFmaRegisters; ++r) accumulators[r] = fma_broadcast(0.001f * static_cast<float>(r));
    const FmaVector scale = fma_broadcast(0.9999f), shift = fma_broadcast(1e-5f);
    for (long i = 0; i < iterations; ++i) {
#pragma GCC unroll 12
        for (int r = 0; r < kFmaRegisters; ++r) accumulators[r] = fma_step(accumulators[r], scale, shift);
    }
    float total = 0;
    for (int r = 0; r < kFmaRegisters; ++r) {
        float lanes[kFmaLanes];
        std::memcpy(lanes, &accumulators[r], sizeof(lanes));
        for (float lane : lanes) total += lane;
    }
    return total;
}
#endif

double measured_fma_peak_gflops(int threads) {
#if defined(__AVX512F__) || defined(__AVX2__)
    constexpr long kIterations = 100'000'000;
    std::vector<float> sink(static_cast<size_t>(threads));
    auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    for (int t = 1; t < threads; ++t) pool.emplace_back([&sink, t] { sink[static_cast<size_t>(t)] = fma_rounds(kIterations); });
    sink[0] = fma_rounds(kIterations);
    for (std::thread& thread : pool) thread.join();
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return 2.0 * kFmaLanes * kFmaRegisters * static_cast<double>(kIterations) * threads / seconds / 1e9;
#else
    (void)threads;
    return 0;
#endif
}

int parse_repeats(int argc, char** argv) {
    int repeats = 7;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--repeats") == 0 && i + 1 < argc) {
            repeats = std::atoi(argv[++i]);
        } else {
            nce::fail("unknown argument '{}'; usage: gemm_benchmark [--repeats N]", argv[i]);
        }
    }
    NCE_CHECK(repeats >= 1, "--repeats must be a whole number >= 1");
    return repeats;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        int repeats = parse_repeats(argc, argv);
        int threads = nce::num_threads();
        const char* coretype = std::getenv("OPENBLAS_CORETYPE");
        fmt::print("gemm_benchmark: engine matmul vs cblas_*gemm, median of {} runs each (alternating) after {} warm-ups\n", repeats,
                   kWarmupRuns);
        fmt::print("threads {} | OpenBLAS core {} | OPENBLAS_CORETYPE={}\n", threads, nce::blas_core_name(),
                   coretype != nullptr ? coretype : "(unset)");
        fmt::print("openblas_get_config: {}\n", openblas_get_config());
        if (double peak = measured_fma_peak_gflops(threads); peak > 0)
            fmt::print("measured fp32 FMA peak on {} threads: {:.0f} GFLOP/s (independent FMAs, no memory traffic)\n",
                       threads, peak);
        fmt::print("\n");
        fmt::print("{:<34} {:<8} {:>10} {:>10} {:>10} {:>10} {:>8} {:>12}\n", "product", "dtype", "engine ms",
                   "cblas ms", "engine GF/s", "cblas GF/s", "ratio", "max |diff|");

        nce::Generator generator(2024);
        for (const GemmCase& c : {GemmCase{"[1024,1024] · [1024,1024]", 1024, 1024, 1024, false, Dtype::Float32},
                                  GemmCase{"q [4096,384] · p [4096,384]^T", 4096, 4096, 384, true, Dtype::Float32},
                                  GemmCase{"[1024,1024] · [1024,1024]", 1024, 1024, 1024, false, Dtype::Float64}})
            run_case(c, repeats, generator);
        fmt::print("\nratio = engine GFLOP/s / cblas GFLOP/s (1.0: the engine adds nothing to OpenBLAS)\n");
    } catch (const std::exception& error) {
        fmt::print(stderr, "gemm_benchmark: error: {}\n", error.what());
        return 1;
    }
    return 0;
}
