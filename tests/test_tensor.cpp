// Tensors, the caching allocator, the random generator and the thread setting.
#include <cmath>
#include <cstdlib>
#include <map>
#include <vector>

#include "tests/test_helpers.h"

using namespace nce;
using nce::testing::kFloatDtypes;

TEST_CASE("tensor: shape, dtype, values and reshape") {
    for (Dtype dtype : kFloatDtypes) {
        Tensor t = Tensor::from_vector({1, 2, 3, 4, 5, 6}, {2, 3}, dtype);
        CHECK(t.shape() == Shape{2, 3});
        CHECK(t.rank() == 2);
        CHECK(t.size(-1) == 3);
        CHECK(t.numel() == 6);
        CHECK(t.dtype() == dtype);
        CHECK(t.at(4) == 5.0);
        Tensor r = t.reshape({3, -1});
        CHECK(r.shape() == Shape{3, 2});
        CHECK(r.same_storage(t));
        Tensor c = t.clone();
        CHECK_FALSE(c.same_storage(t));
        CHECK(c.to_vector() == t.to_vector());
        CHECK(t.to(Dtype::Float64).to_vector() == std::vector<double>{1, 2, 3, 4, 5, 6});
    }
    CHECK(Tensor::scalar(2.5, Dtype::Float64).item() == 2.5);
    CHECK(Tensor::from_indices({3, 1, 2}, {3}).to_indices() == std::vector<int64_t>{3, 1, 2});
}

TEST_CASE("tensor: misuse gives one clear error") {
    Tensor t = Tensor::zeros({2, 3}, Dtype::Float32);
    CHECK_ERROR_MENTIONS(t.reshape({4, 2}), "cannot reshape [2, 3]");
    CHECK_ERROR_MENTIONS(t.data<double>(), "requested as float64");
    CHECK_ERROR_MENTIONS(t.item(), "has 6 elements");
    CHECK_ERROR_MENTIONS(Tensor::from_vector({1, 2}, {3}, Dtype::Float64), "do not fill shape [3]");
    CHECK_ERROR_MENTIONS(matmul(t, Tensor::zeros({2, 3}, Dtype::Float32)), "inner sizes differ");
    CHECK_ERROR_MENTIONS(matmul(t, Tensor::zeros({3, 2}, Dtype::Float64)), "dtypes differ");
    CHECK_ERROR_MENTIONS(parse_dtype("float16"), "use float32 or float64");
    // Sizes from a file or a flag: a count past int64, or bytes past 2^62, is an error before
    // anything is allocated (a wrapped count once made a tiny buffer for a huge tensor).
    CHECK_ERROR_MENTIONS(shape_numel({int64_t{1} << 61, 8}), "[2305843009213693952, 8] has more elements than");
    CHECK_ERROR_MENTIONS(Tensor::empty({int64_t{1} << 59, 4}, Dtype::Float32), "needs more than 2^62 bytes");
    CHECK_ERROR_MENTIONS(Tensor::zeros({int64_t{1} << 40, int64_t{1} << 40}, Dtype::Float64), "more elements than");
}

TEST_CASE("matmul: every transpose and batch form equals a naive triple loop") {
    Generator generator(7);
    for (Dtype dtype : kFloatDtypes) {
        Tensor a = generator.normal({2, 3, 4}, dtype), b = generator.normal({2, 4, 5}, dtype);
        Tensor c = matmul(a, b);
        REQUIRE(c.shape() == Shape{2, 3, 5});
        for (int64_t batch = 0; batch < 2; ++batch)
            for (int64_t i = 0; i < 3; ++i)
                for (int64_t j = 0; j < 5; ++j) {
                    double expected = 0;
                    for (int64_t k = 0; k < 4; ++k) expected += a.at(batch * 12 + i * 4 + k) * b.at(batch * 20 + k * 5 + j);
                    CHECK(c.at(batch * 15 + i * 5 + j) == doctest::Approx(expected).epsilon(1e-5));
                }
        Tensor x = generator.normal({4, 3}, dtype), y = generator.normal({5, 4}, dtype);
        Tensor both = matmul(x, y, Transpose::Both);  // x^T y^T = (y x)^T
        Tensor reference = transpose(matmul(y, x), 0, 1);
        CHECK(max_abs_difference(both, reference) < 1e-5);
    }
}

TEST_CASE("allocator: a freed buffer is handed back out for the next request of its size class") {
    CachingAllocator& allocator = CachingAllocator::host();
    CHECK(CachingAllocator::size_class(1) == 64);
    CHECK(CachingAllocator::size_class(1000) == 1024);
    CHECK(CachingAllocator::size_class(1025) == 1280);  // quarter steps above a power of two
    CHECK(CachingAllocator::size_class(1 << 20) == (1 << 20));
    const void* first_address;
    {
        Tensor t = Tensor::empty({1000, 1000}, Dtype::Float32);
        first_address = t.raw_data();
    }
    AllocatorStats before = allocator.stats();
    Tensor again = Tensor::empty({1000, 1000}, Dtype::Float32);
    AllocatorStats after = allocator.stats();
    CHECK(again.raw_data() == first_address);
    CHECK(after.cache_hits == before.cache_hits + 1);
    CHECK(reinterpret_cast<uintptr_t>(again.raw_data()) % 64 == 0);
}

// A system that counts what the allocator has taken from it and not given back.
struct CountingSystem {
    static inline std::size_t outstanding = 0, calls = 0;
    static inline std::map<void*, std::size_t> sizes;
    static void* allocate(std::size_t bytes) {
        void* pointer = std::malloc(bytes);
        sizes[pointer] = bytes;
        outstanding += bytes;
        ++calls;
        return pointer;
    }
    static void free(void* pointer) {
        outstanding -= sizes.at(pointer);
        sizes.erase(pointer);
        std::free(pointer);
    }
};

TEST_CASE("allocator: blocks of sizes no longer asked for go back once it holds 1.5x its peak in use") {
    CountingSystem::outstanding = CountingSystem::calls = 0;
    CachingAllocator allocator({CountingSystem::allocate, CountingSystem::free});
    // Forty buffers of forty classes in turn (64 KiB up to 56 MiB), one at a time, as a batch
    // padded to another length each step asks: the peak in use is the largest, and without the
    // limit all forty would stay cached.
    std::size_t most = 0, held_most = 0, bytes = std::size_t{1} << 16;
    for (int i = 0; i < 40; ++i, bytes = CachingAllocator::size_class(bytes + 1)) {
        void* pointer = allocator.allocate(bytes);
        most = std::max(most, CachingAllocator::size_class(bytes));
        held_most = std::max(held_most, CountingSystem::outstanding);
        CHECK(static_cast<double>(CountingSystem::outstanding) <= CachingAllocator::kHeldLimit * static_cast<double>(most));
        allocator.release(pointer, bytes);
    }
    CHECK(CountingSystem::calls == 40);
    CHECK(held_most < 2 * most);  // all forty would be over 4 times the largest
    allocator.empty_cache();
    CHECK(CountingSystem::outstanding == 0);
}

TEST_CASE("allocator: a repeated pattern of requests is served from the cache after its first round") {
    CountingSystem::outstanding = CountingSystem::calls = 0;
    CachingAllocator allocator({CountingSystem::allocate, CountingSystem::free});
    // A step: three buffers alive at once, freed, then a smaller one alone (held 1.1x the peak).
    auto step = [&] {
        std::vector<std::size_t> sizes{3000000, 2000000, 1000000};
        std::vector<void*> live;
        for (std::size_t bytes : sizes) live.push_back(allocator.allocate(bytes));
        for (size_t i = 0; i < live.size(); ++i) allocator.release(live[i], sizes[i]);
        void* alone = allocator.allocate(600000);
        allocator.release(alone, 600000);
    };
    step();
    const std::size_t first_round = CountingSystem::calls;
    for (int round = 0; round < 5; ++round) step();
    CHECK(first_round == 4);
    CHECK(CountingSystem::calls == first_round);
    allocator.empty_cache();
    CHECK(CountingSystem::outstanding == 0);
}

TEST_CASE("random: the same seed gives bit-identical draws for any thread count") {
    auto draw = [](int threads) {
        set_num_threads(threads);
        Generator generator(42);
        Tensor normal = generator.normal({100000}, Dtype::Float64);
        Tensor uniform = generator.uniform({1000}, Dtype::Float32, -1, 1);
        Tensor mask = generator.bernoulli({1000}, Dtype::Float32, 0.3);
        return std::vector<Tensor>{normal, uniform, mask};
    };
    std::vector<Tensor> one = draw(1), two = draw(2);
    set_num_threads(2);
    for (size_t i = 0; i < one.size(); ++i) CHECK(one[i].to_vector() == two[i].to_vector());

    Generator a(1), b(2);
    CHECK(a.normal({8}, Dtype::Float64).to_vector() != b.normal({8}, Dtype::Float64).to_vector());
    // Successive draws continue the stream instead of repeating it.
    Generator c(1);
    CHECK(c.normal({8}, Dtype::Float64).to_vector() != c.normal({8}, Dtype::Float64).to_vector());
}

TEST_CASE("random: the distributions have the moments they should") {
    Generator generator(3);
    std::vector<double> normal = generator.normal({200000}, Dtype::Float64, 1.0, 2.0).to_vector();
    double mean = 0, square = 0;
    for (double v : normal) mean += v;
    mean /= normal.size();
    for (double v : normal) square += (v - mean) * (v - mean);
    CHECK(mean == doctest::Approx(1.0).epsilon(0.02));
    CHECK(std::sqrt(square / normal.size()) == doctest::Approx(2.0).epsilon(0.02));
    std::vector<double> uniform = generator.uniform({100000}, Dtype::Float64, 2, 4).to_vector();
    double low = 10, high = -10, total = 0;
    for (double v : uniform) low = std::min(low, v), high = std::max(high, v), total += v;
    CHECK(low >= 2);
    CHECK(high < 4);
    CHECK(total / uniform.size() == doctest::Approx(3.0).epsilon(0.01));
    std::vector<double> mask = generator.bernoulli({100000}, Dtype::Float64, 0.25).to_vector();
    double ones = 0;
    for (double v : mask) ones += v;
    CHECK(ones / mask.size() == doctest::Approx(0.25).epsilon(0.03));
}

TEST_CASE("reductions do not depend on the thread count") {
    Generator generator(5);
    Tensor x = generator.normal({1 << 20}, Dtype::Float32);
    set_num_threads(1);
    double one = sum(x).item();
    set_num_threads(2);
    double two = sum(x).item();
    CHECK(one == two);
}
