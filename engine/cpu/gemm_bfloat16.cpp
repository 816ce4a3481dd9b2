// bfloat16 GEMMs through oneDNN's matmul (the plan is in gemm_bfloat16.h).
#include "engine/cpu/gemm_bfloat16.h"

#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>

#include "engine/allocator.h"
#include "engine/error.h"
#include "engine/gemm_precision.h"
#include "engine/threads.h"

namespace nce::cpu {
namespace {

using dnnl::memory;

// Below this many multiply-adds a product runs on one thread; pieces are cut at multiples
// of 16 rows or columns (the same choices as engine/blas.cpp).
constexpr int64_t kSplitWork = int64_t{1} << 21;
constexpr int64_t kPieceMultiple = 16;
// At least this many elements per task when an operand is rounded on several threads.
constexpr int64_t kRoundGrain = int64_t{1} << 16;
// Products kept; past it the cache starts afresh (a run uses a few dozen shapes).
constexpr size_t kCachedProducts = 512;

const dnnl::engine& cpu_engine() {
    static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    return engine;
}

// oneDNN decides its thread count from OpenMP's when a primitive is made and uses it when
// it runs; this thread's OpenMP team is 1 while it does either, so oneDNN never starts
// threads of its own. The old value comes back after (FAISS uses OpenMP on the main thread).
class OneOpenMpThread {
public:
    OneOpenMpThread() : previous_(omp_get_max_threads()) { omp_set_num_threads(1); }
    ~OneOpenMpThread() { omp_set_num_threads(previous_); }
    OneOpenMpThread(const OneOpenMpThread&) = delete;
    OneOpenMpThread& operator=(const OneOpenMpThread&) = delete;

private:
    int previous_;
};

// Scratch memory from the caching allocator, so a training step reuses the pages the last
// one touched.
class Scratch {
public:
    explicit Scratch(size_t bytes) : bytes_(std::max<size_t>(bytes, 64)) {
        pointer_ = CachingAllocator::host().allocate(bytes_);
    }
    ~Scratch() { CachingAllocator::host().release(pointer_, bytes_); }
    Scratch(const Scratch&) = delete;
    Scratch& operator=(const Scratch&) = delete;
    template <typename T>
    T* as() const {
        return static_cast<T*>(pointer_);
    }

private:
    size_t bytes_;
    void* pointer_;
};

// dst [rows, cols] (dense) = bf16(src [rows, cols] with row stride ld).
void round_block(const float* src, int64_t rows, int64_t cols, int64_t ld, uint16_t* dst) {
    for (int64_t r = 0; r < rows; ++r) {
        const float* from = src + r * ld;
        uint16_t* to = dst + r * cols;
        for (int64_t j = 0; j < cols; ++j) to[j] = round_to_bfloat16(from[j]);
    }
}

// The same, rows split over the engine's threads (each element rounded by one thread).
void round_block_in_parallel(const float* src, int64_t rows, int64_t cols, int64_t ld, uint16_t* dst) {
    int64_t grain = std::max<int64_t>(1, kRoundGrain / std::max<int64_t>(1, cols));
    parallel_for(rows, grain, [&](int64_t begin, int64_t end) {
        round_block(src + begin * ld, end - begin, cols, ld, dst + begin * cols);
    });
}

// An operand as stored: op(X) = X^T when transposed, so X is [inner, outer] then, else
// [outer, inner]; `outer` is op(X)'s first axis for A (m) and its second for B (n).
struct Operand {
    const float* data;
    int64_t ld;
    bool transposed;
};

// op(X)[first : first + count] along `outer`, rounded into a dense buffer in X's orientation:
// [count, inner] untransposed, [inner, count] transposed.
void round_operand(const Operand& x, int64_t first, int64_t count, int64_t inner, uint16_t* dst, bool parallel) {
    const float* src = x.transposed ? x.data + first : x.data + first * x.ld;
    int64_t rows = x.transposed ? inner : count, cols = x.transposed ? count : inner;
    if (parallel)
        round_block_in_parallel(src, rows, cols, x.ld, dst);
    else
        round_block(src, rows, cols, x.ld, dst);
}

// ---------------------------------------------------------------- the kept primitives

struct ProductKey {
    int64_t m, n, k;
    bool transpose_a, transpose_b;
    uint32_t alpha_bits, beta_bits;
    bool operator==(const ProductKey&) const = default;
};

struct ProductKeyHash {
    size_t operator()(const ProductKey& key) const {
        size_t h = std::hash<int64_t>()(key.m);
        for (uint64_t part : {uint64_t(key.n), uint64_t(key.k), uint64_t(key.transpose_a) << 1 | key.transpose_b,
                              uint64_t(key.alpha_bits) << 32 | key.beta_bits})
            h = h * 1000003u ^ std::hash<uint64_t>()(part);
        return h;
    }
};

// C [m, n] dense (f32) = alpha · A [m, k] · B [k, n] (bf16, dense in their own orientation)
// + beta · C.
struct Product {
    memory::desc a, b, c, scratchpad;
    dnnl::matmul primitive;
    std::string implementation;  // oneDNN's name for the kernel it chose, e.g. "brg:avx512_core_bf16"
};

std::shared_ptr<const Product> make_product(const ProductKey& key) {
    auto strides = [](bool transposed, int64_t rows, int64_t cols) {
        // a dense [rows, cols] matrix, stored as is or as its transpose [cols, rows]
        return transposed ? memory::dims{1, rows} : memory::dims{cols, 1};
    };
    auto product = std::make_shared<Product>();
    product->a = memory::desc({key.m, key.k}, memory::data_type::bf16, strides(key.transpose_a, key.m, key.k));
    product->b = memory::desc({key.k, key.n}, memory::data_type::bf16, strides(key.transpose_b, key.k, key.n));
    product->c = memory::desc({key.m, key.n}, memory::data_type::f32, memory::dims{key.n, 1});
    dnnl::primitive_attr attributes;
    attributes.set_scratchpad_mode(dnnl::scratchpad_mode::user);  // one primitive runs on many threads at once
    float alpha = std::bit_cast<float>(key.alpha_bits), beta = std::bit_cast<float>(key.beta_bits);
    dnnl::post_ops after;
#if DNNL_VERSION_MAJOR >= 3
    // oneDNN 3 has no output scale: alpha is a linear post-op (alpha · x + 0, the same one
    // float32 multiplication), applied before beta's sum.
    if (alpha != 1.0f) after.append_eltwise(dnnl::algorithm::eltwise_linear, alpha, 0.0f);
#else
    if (alpha != 1.0f) attributes.set_output_scales(0, {alpha});
#endif
    if (beta != 0.0f) after.append_sum(beta);
    attributes.set_post_ops(after);
    OneOpenMpThread single;
#if DNNL_VERSION_MAJOR >= 3
    dnnl::matmul::primitive_desc description(cpu_engine(), product->a, product->b, product->c, attributes);
#else
    dnnl::matmul::primitive_desc description(dnnl::matmul::desc(product->a, product->b, product->c), attributes,
                                             cpu_engine());
#endif
    product->scratchpad = description.scratchpad_desc();
    product->implementation = description.impl_info_str();
    product->primitive = dnnl::matmul(description);
    return product;
}

std::shared_ptr<const Product> product_for(const ProductKey& key) {
    static std::mutex mutex;
    static std::unordered_map<ProductKey, std::shared_ptr<const Product>, ProductKeyHash> products;
    std::lock_guard lock(mutex);  // held while making one: two threads never make the same twice
    if (auto found = products.find(key); found != products.end()) return found->second;
    if (products.size() >= kCachedProducts) products.clear();
    try {
        return products[key] = make_product(key);
    } catch (const dnnl::error& error) {
        fail("bfloat16 GEMM [{}, {}] x [{}, {}]: oneDNN cannot make a bfloat16 matmul on this CPU ({}): {}; "
             "use --gemm-precision float32",
             key.m, key.k, key.k, key.n, onednn_cpu_isa(), error.what());
    }
}

// Runs a kept product on the calling thread: a, b rounded as the product expects, c dense.
void run(const Product& product, const uint16_t* a, const uint16_t* b, float* c) {
    static thread_local dnnl::stream stream(cpu_engine());
    const dnnl::engine& engine = cpu_engine();
    Scratch scratchpad(product.scratchpad.get_size());
    memory a_memory(product.a, engine, const_cast<uint16_t*>(a)), b_memory(product.b, engine, const_cast<uint16_t*>(b)),
        c_memory(product.c, engine, c), scratchpad_memory(product.scratchpad, engine, scratchpad.as<void>());
    OneOpenMpThread single;
    product.primitive.execute(stream, {{DNNL_ARG_SRC, a_memory},
                                       {DNNL_ARG_WEIGHTS, b_memory},
                                       {DNNL_ARG_DST, c_memory},
                                       {DNNL_ARG_SCRATCHPAD, scratchpad_memory}});
    stream.wait();
}

// C [m, n] (row stride ldc) = alpha · a · b + beta · C, a and b rounded and dense as for a
// product of that shape: straight into C when it is dense, else through a dense buffer.
void multiply_rounded(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, float alpha,
                      const uint16_t* a, const uint16_t* b, float beta, float* c, int64_t ldc) {
    auto key_for = [&](float beta_used) {
        return ProductKey{m, n, k, transpose_a, transpose_b, std::bit_cast<uint32_t>(alpha),
                          std::bit_cast<uint32_t>(beta_used)};
    };
    if (ldc == n) {
        run(*product_for(key_for(beta)), a, b, c);
        return;
    }
    Scratch dense(size_t(m) * size_t(n) * sizeof(float));
    float* product = dense.as<float>();
    run(*product_for(key_for(0.0f)), a, b, product);
    for (int64_t i = 0; i < m; ++i) {
        float* row = c + i * ldc;
        const float* computed = product + i * n;
        if (beta == 0.0f)
            std::memcpy(row, computed, size_t(n) * sizeof(float));
        else
            for (int64_t j = 0; j < n; ++j) row[j] = computed[j] + beta * row[j];
    }
}

// k = 0: an empty sum, C = beta · C (C is not read when beta = 0, as in BLAS).
void scale_only(int64_t m, int64_t n, float beta, float* c, int64_t ldc) {
    for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
}

}  // namespace

void bfloat16_gemm_on_this_thread(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, float alpha,
                                  const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                                  int64_t ldc) {
    if (m <= 0 || n <= 0) return;
    if (k <= 0) return scale_only(m, n, beta, c, ldc);
    Scratch a_rounded(size_t(m) * size_t(k) * 2), b_rounded(size_t(k) * size_t(n) * 2);
    round_operand({a, lda, transpose_a}, 0, m, k, a_rounded.as<uint16_t>(), false);
    round_operand({b, ldb, !transpose_b}, 0, n, k, b_rounded.as<uint16_t>(), false);
    multiply_rounded(transpose_a, transpose_b, m, n, k, alpha, a_rounded.as<uint16_t>(), b_rounded.as<uint16_t>(),
                     beta, c, ldc);
}

void bfloat16_gemm(bool transpose_a, bool transpose_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                   int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
    int64_t threads = num_threads();
    // Rows whenever there are enough (C's row pieces stay dense), else columns.
    bool split_rows = m / kPieceMultiple >= 2 || m >= n;
    int64_t length = split_rows ? m : n;
    int64_t pieces = std::min(threads, length / kPieceMultiple);
    if (pieces <= 1 || m * n * k < kSplitWork || k <= 0) {
        bfloat16_gemm_on_this_thread(transpose_a, transpose_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
        return;
    }
    // The side every piece shares is rounded once, on all threads; each piece rounds its own
    // slice of the other side. op(B)'s outer axis is n: B is [n, k] when transposed, so its
    // "transposed" storage in Operand terms is the untransposed one.
    Operand a_operand{a, lda, transpose_a}, b_operand{b, ldb, !transpose_b};
    const Operand& shared = split_rows ? b_operand : a_operand;
    const Operand& sliced = split_rows ? a_operand : b_operand;
    int64_t shared_outer = split_rows ? n : m;
    Scratch shared_rounded(size_t(shared_outer) * size_t(k) * 2);
    round_operand(shared, 0, shared_outer, k, shared_rounded.as<uint16_t>(), true);

    // Piece i covers [start(i), start(i + 1)), boundaries rounded to kPieceMultiple.
    auto start = [&](int64_t i) {
        return i == pieces ? length : (length * i / pieces) / kPieceMultiple * kPieceMultiple;
    };
    tbb::parallel_for(
        int64_t{0}, pieces,
        [&](int64_t i) {
            int64_t first = start(i), count = start(i + 1) - first;
            Scratch slice(size_t(count) * size_t(k) * 2);
            round_operand(sliced, first, count, k, slice.as<uint16_t>(), false);
            const uint16_t* shared_data = shared_rounded.as<uint16_t>();
            if (split_rows)  // rows [first, first + count) of op(A) and C
                multiply_rounded(transpose_a, transpose_b, count, n, k, alpha, slice.as<uint16_t>(), shared_data,
                                 beta, c + first * ldc, ldc);
            else  // columns [first, first + count) of op(B) and C
                multiply_rounded(transpose_a, transpose_b, m, count, k, alpha, shared_data, slice.as<uint16_t>(),
                                 beta, c + first, ldc);
        },
        tbb::simple_partitioner());
}

void check_bfloat16_gemm_available() {
    static std::once_flag checked;
    std::call_once(checked, [] { product_for({64, 64, 64, false, false, std::bit_cast<uint32_t>(1.0f), 0}); });
}

}  // namespace nce::cpu

namespace nce {

const char* onednn_cpu_isa() {
    switch (dnnl::get_effective_cpu_isa()) {
        case dnnl::cpu_isa::sse41: return "sse41";
        case dnnl::cpu_isa::avx: return "avx";
        case dnnl::cpu_isa::avx2: return "avx2";
        case dnnl::cpu_isa::avx2_vnni: return "avx2_vnni";
#if DNNL_VERSION_MAJOR < 3
        case dnnl::cpu_isa::avx512_mic: return "avx512_mic";
        case dnnl::cpu_isa::avx512_mic_4ops: return "avx512_mic_4ops";
#endif
        case dnnl::cpu_isa::avx512_core: return "avx512_core";
        case dnnl::cpu_isa::avx512_core_vnni: return "avx512_core_vnni";
        case dnnl::cpu_isa::avx512_core_bf16: return "avx512_core_bf16";
        case dnnl::cpu_isa::avx512_core_amx: return "avx512_core_amx";
#if DNNL_VERSION_MAJOR >= 3
        case dnnl::cpu_isa::avx2_vnni_2: return "avx2_vnni_2";
        case dnnl::cpu_isa::avx512_core_fp16: return "avx512_core_fp16";
        case dnnl::cpu_isa::avx512_core_amx_fp16: return "avx512_core_amx_fp16";
#endif
        default: return "unknown";
    }
}

std::string bfloat16_gemm_implementation() {
    return cpu::product_for({1024, 1024, 384, false, true, std::bit_cast<uint32_t>(1.0f), 0})->implementation;
}

}  // namespace nce
