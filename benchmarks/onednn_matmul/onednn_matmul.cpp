// One thread's bfloat16 matmul speed in the oneDNN this program is built against, on the
// shapes of a MiniLM encode (benchmarks/onednn_matmul/run.sh builds it against Debian's
// oneDNN and against newer ones, side by side).
//
// Each product is C [m, n] f32 = A [m, k] bf16 · op(B) bf16, A dense, B [n, k] when
// transposed (a weight as nn/ stores it) else [k, n], C dense: what
// engine/cpu/gemm_bfloat16.cpp hands oneDNN. The primitive is made once, run until a second
// has passed, and the best of three such rounds is printed as GFLOP/s with oneDNN's name
// for the kernel it chose.
#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <vector>

namespace {

using dnnl::memory;

struct Shape {
    const char* what;
    int64_t m, n, k;
    bool transpose_b;
};

dnnl::matmul::primitive_desc describe(const dnnl::engine& engine, const Shape& s) {
    memory::desc a({s.m, s.k}, memory::data_type::bf16, memory::dims{s.k, 1});
    memory::desc b({s.k, s.n}, memory::data_type::bf16, s.transpose_b ? memory::dims{1, s.k} : memory::dims{s.n, 1});
    memory::desc c({s.m, s.n}, memory::data_type::f32, memory::dims{s.n, 1});
#if DNNL_VERSION_MAJOR >= 3
    return dnnl::matmul::primitive_desc(engine, a, b, c);
#else
    return dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, b, c), engine);
#endif
}

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main() {
    omp_set_num_threads(1);
    dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    dnnl::stream stream(engine);
    const dnnl::version_t* version = dnnl_version();
    std::printf("oneDNN %d.%d.%d, one thread\n", version->major, version->minor, version->patch);
    // A 64 x 128 MiniLM encode on 2 threads: each thread's half of the 8192 token rows, and
    // one head's attention products (128 tokens, 32 wide).
    const Shape shapes[] = {
        {"q/k/v projection", 4096, 1152, 384, true}, {"attention output", 4096, 384, 384, true},
        {"feed-forward in", 4096, 1536, 384, true},  {"feed-forward out", 4096, 384, 1536, true},
        {"head scores", 128, 128, 32, true},         {"head context", 128, 32, 128, false},
    };
    for (const Shape& s : shapes) {
        auto description = describe(engine, s);
        dnnl::matmul product(description);
        std::vector<uint16_t> a(size_t(s.m * s.k), 0x3f80), b(size_t(s.k * s.n), 0x3c00);  // 1.0, 2^-7
        std::vector<float> c(size_t(s.m * s.n));
        memory a_memory(description.src_desc(), engine, a.data());
        memory b_memory(description.weights_desc(), engine, b.data());
        memory c_memory(description.dst_desc(), engine, c.data());
        auto run = [&] {
            product.execute(stream, {{DNNL_ARG_SRC, a_memory}, {DNNL_ARG_WEIGHTS, b_memory}, {DNNL_ARG_DST, c_memory}});
            stream.wait();
        };
        run();
        double best = 1e30;
        for (int round = 0; round < 3; ++round) {
            int64_t runs = 0;
            auto start = std::chrono::steady_clock::now();
            while (runs == 0 || seconds_since(start) < 1.0) {
                run();
                ++runs;
            }
            best = std::min(best, seconds_since(start) / double(runs));
        }
        double gflops = 2.0 * double(s.m) * double(s.n) * double(s.k) / best / 1e9;
        std::printf("%-17s %5lld x %5lld x %5lld  %8.1f GFLOP/s  %9.3f ms  %s\n", s.what, (long long)s.m,
                    (long long)s.n, (long long)s.k, gflops, best * 1e3, description.impl_info_str());
    }
}
