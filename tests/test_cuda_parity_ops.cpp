// The CUDA backend against the CPU backend for the kernels of part 2 (row gathers and
// scatters, per-row picks, keep_where, softmax, layer norm, random numbers, dropout, packed
// attention) and the ops built on them, forward and backward (tests/cuda_parity_harness.h):
// float64 to 1e-12, float32 to 1e-5; random draws and dropout masks bit for bit.
#include <doctest/doctest.h>

#include <limits>

#include "tests/cuda_parity_harness.h"
#include "tests/test_helpers.h"

using namespace nce;
using namespace nce::testing;

namespace {

// 1 where x is nonzero, else 0: a dropout mask read back from its output.
std::vector<bool> nonzero_pattern(const Tensor& x) {
    std::vector<bool> pattern;
    for (double v : x.to(Device::CPU).to_vector()) pattern.push_back(v != 0);
    return pattern;
}

// A [rows, columns] 0/1 mask (float64) with the given rows' tails cut: row r keeps lengths[r] tokens.
Tensor length_mask(const std::vector<int64_t>& lengths, int64_t columns) {
    std::vector<double> values;
    for (int64_t length : lengths)
        for (int64_t c = 0; c < columns; ++c) values.push_back(c < length ? 1.0 : 0.0);
    return Tensor::from_vector(values, {static_cast<int64_t>(lengths.size()), columns}, Dtype::Float64);
}

// A Var op of one input as a ParityFunction.
ParityFunction one_input(Var (*op)(const Var&)) {
    return [op](const std::vector<Var>& x, Device) { return op(x[0]); };
}

}  // namespace

TEST_CASE("cuda parity: index_select forward, and its backward index_add with repeated rows") {
    const Tensor table = parity_values({6, 4}, 30);
    const Tensor indices = Tensor::from_indices({5, 0, 2, 5, 5, 1}, {2, 3});
    check_parity_both("index_select [2, 3] of [6, 4]",
                      [&](const std::vector<Var>& v, Device device) { return index_select(v[0], indices.to(device)); },
                      {table});
    check_parity_both("index_select of a 3-D table",
                      [&](const std::vector<Var>& v, Device device) {
                          return index_select(v[0], Tensor::from_indices({1, 1, 0}, {3}).to(device));
                      },
                      {parity_values({2, 3, 2}, 31)});
    // index_add directly: every destination row's sum in the CPU's order, the same bits.
    const Tensor src = parity_values({7, 3}, 32);
    const Tensor rows = Tensor::from_indices({3, 1, 3, 0, 3, 1, 4}, {7});
    for (Dtype dtype : {Dtype::Float64, Dtype::Float32}) {
        Tensor cpu_table = parity_values({5, 3}, 33).to(dtype);
        Tensor cuda_table = cpu_table.to(Device::CUDA);
        backend_for(Device::CPU).index_add_rows(src.to(dtype), rows, cpu_table);
        backend_for(Device::CUDA).index_add_rows(src.to(dtype).to(Device::CUDA), rows.to(Device::CUDA), cuda_table);
        CHECK(cuda_table.to(Device::CPU).to_vector() == cpu_table.to_vector());
    }
    // A bad index is found by the kernel and reported at the next read-back, with the CPU's message;
    // the record is then clear, so the next read succeeds.
    CHECK_ERROR_MENTIONS(index_select(table.to(Device::CUDA), Tensor::from_indices({6}, {1}).to(Device::CUDA)).to(Device::CPU),
                         "index_select: index 6 is out of range [0, 6)");
    CHECK(table.to(Device::CUDA).to(Device::CPU).to_vector() == table.to_vector());
    Tensor cuda_table = parity_values({5, 3}, 33).to(Device::CUDA);
    backend_for(Device::CUDA).index_add_rows(src.to(Device::CUDA), Tensor::from_indices({3, 1, -1, 0, 3, 1, 4}, {7}).to(Device::CUDA),
                                             cuda_table);
    CHECK_ERROR_MENTIONS(cuda_table.to(Device::CPU), "index_add: index -1 is out of range [0, 5)");
}

TEST_CASE("cuda parity: cross_entropy (gather forward, scatter_add backward) and max's backward") {
    const Tensor logits = parity_values({5, 7}, 34);
    const Tensor targets = Tensor::from_indices({0, 6, 3, 3, 1}, {5});
    check_parity_both("cross_entropy [5, 7]",
                      [&](const std::vector<Var>& v, Device device) { return cross_entropy(v[0], targets.to(device)); },
                      {logits});
    CHECK_ERROR_MENTIONS(
        cross_entropy(Var(logits.to(Device::CUDA)), Tensor::from_indices({0, 7, 0, 0, 0}, {5}).to(Device::CUDA)).value().to(Device::CPU),
        "out of range");
    const Tensor x = parity_values({3, 4, 5}, 35);
    for (int64_t axis : {0, 1, 2})
        for (bool keepdim : {false, true})
            check_parity_both(fmt::format("max axis {} keepdim {}", axis, keepdim),
                              [=](const std::vector<Var>& v, Device) { return max(v[0], axis, keepdim); }, {x});
    check_parity_both("max of all", [](const std::vector<Var>& v, Device) { return max(v[0]); }, {x});
}

TEST_CASE("cuda parity: relu and keep_where, forward and backward, broadcast keep") {
    const Tensor x = parity_values({4, 7}, 36, -3, 3);
    check_parity_both("relu", [](const std::vector<Var>& v, Device) { return relu(v[0]); }, {x});
    const Tensor values = parity_values({2, 3, 4}, 37);
    for (Shape keep_shape : {Shape{2, 3, 4}, Shape{3, 1}, Shape{2, 1, 4}, Shape{4}, Shape{}}) {
        const Tensor keep = greater(parity_values(keep_shape, 38), Tensor::scalar(0.0, Dtype::Float64));
        check_tensor_parity("keep_where keep " + shape_string(keep_shape),
                            [](const std::vector<Tensor>& t) { return keep_where(t[0], t[1], -7.5); }, {values, keep});
    }
    // A select, not a product: +inf where kept stays, -inf fills where not.
    const double inf = std::numeric_limits<double>::infinity();
    const Tensor infinite = Tensor::from_vector({inf, 1, -inf, 2}, {4}, Dtype::Float64);
    const Tensor keep = Tensor::from_vector({1, 0, 0, 1}, {4}, Dtype::Float64);
    CHECK(keep_where(infinite.to(Device::CUDA), keep.to(Device::CUDA), -inf).to(Device::CPU).to_vector() ==
          std::vector<double>{inf, -inf, -inf, 2});
}

TEST_CASE("cuda parity: softmax and log_softmax, forward and backward, masked entries") {
    for (Shape shape : {Shape{3, 4, 6}, Shape{5, 1}, Shape{2, 33}}) {
        const Tensor x = parity_values(shape, 39);
        check_parity_both("softmax " + shape_string(shape), one_input(softmax), {x});
        check_parity_both("log_softmax " + shape_string(shape), one_input(log_softmax), {x});
    }
    const double inf = std::numeric_limits<double>::infinity();
    const Tensor masked = Tensor::from_vector({1, -inf, 2, 0.5, -inf, -inf, 3, -1}, {2, 4}, Dtype::Float64);
    check_tensor_parity("softmax with -inf", [](const std::vector<Tensor>& t) { return softmax(t[0]); }, {masked});
    CHECK(softmax(masked.to(Device::CUDA)).to(Device::CPU).at(1) == 0.0);
}

TEST_CASE("cuda parity: layer_norm, forward and backward (input, weight and bias)") {
    for (Shape shape : {Shape{2, 3, 8}, Shape{5, 3}, Shape{1, 17}}) {
        const int64_t width = shape.back();
        check_parity_both("layer_norm " + shape_string(shape),
                          [](const std::vector<Var>& v, Device) { return layer_norm(v[0], v[1], v[2]); },
                          {parity_values(shape, 40), parity_values({width}, 41, 0.5, 1.5), parity_values({width}, 42)});
    }
}

TEST_CASE("cuda parity: random fills are the CPU's, bit for bit (uniform, Bernoulli) or to rounding (normal)") {
    for (Dtype dtype : {Dtype::Float64, Dtype::Float32}) {
        for (uint64_t skip : {0, 1, 7}) {  // an odd offset starts Bernoulli on a pair's low half
            Generator cpu(123), cuda(123);
            cpu.take(skip);
            cuda.take(skip);
            const Shape shape{3, 11};
            CHECK(cuda.uniform(shape, dtype, -2, 3, Device::CUDA).to(Device::CPU).to_vector() ==
                  cpu.uniform(shape, dtype, -2, 3).to_vector());
            CHECK(cuda.bernoulli(shape, dtype, 0.3, Device::CUDA).to(Device::CPU).to_vector() ==
                  cpu.bernoulli(shape, dtype, 0.3).to_vector());
            check_close(cuda.normal(shape, dtype, 1, 2, Device::CUDA), cpu.normal(shape, dtype, 1, 2),
                        fmt::format("normal in {} after {}", dtype_name(dtype), skip));
            CHECK(cuda.offset() == cpu.offset());
        }
    }
}

TEST_CASE("cuda parity: dropout and relu_dropout, masks equal bit for bit, forward and backward") {
    const Tensor x = parity_values({4, 9}, 43);
    for (double p : {0.1, 0.5}) {
        for (bool relu_first : {false, true}) {
            auto f = [p, relu_first](const std::vector<Var>& v, Device) {
                Generator generator(99);
                generator.take(3);  // an odd offset
                return relu_first ? relu_dropout(v[0], p, generator, true) : dropout(v[0], p, generator, true);
            };
            const std::string name = fmt::format("{} p {}", relu_first ? "relu_dropout" : "dropout", p);
            check_parity_both(name, f, {x});
            for (Dtype dtype : {Dtype::Float64, Dtype::Float32}) {
                const Tensor cpu = f({Var(x.to(dtype))}, Device::CPU).value();
                const Tensor cuda = f({Var(x.to(dtype).to(Device::CUDA))}, Device::CUDA).value();
                CHECK_MESSAGE(nonzero_pattern(cuda) == nonzero_pattern(cpu), name << ": the masks differ");
            }
        }
    }
}

TEST_CASE("cuda parity: masked_mean_pool, l2_normalize and scaled_dot_product_attention") {
    const Tensor mask = length_mask({4, 2}, 4);
    check_parity_both("masked_mean_pool",
                      [&](const std::vector<Var>& v, Device device) { return masked_mean_pool(v[0], mask.to(device)); },
                      {parity_values({2, 4, 3}, 44)});
    check_parity_both("l2_normalize", [](const std::vector<Var>& v, Device) { return l2_normalize(v[0]); },
                      {parity_values({5, 6}, 45)});
    const Tensor key_mask = length_mask({5, 3}, 5);
    for (bool masked : {false, true})
        check_parity_both(fmt::format("scaled_dot_product_attention masked {}", masked),
                          [&, masked](const std::vector<Var>& v, Device device) {
                              return scaled_dot_product_attention(v[0], v[1], v[2],
                                                                  masked ? key_mask.to(device) : Tensor());
                          },
                          {parity_values({2, 2, 3, 4}, 46), parity_values({2, 2, 5, 4}, 47),
                           parity_values({2, 2, 5, 4}, 48)});
}

TEST_CASE("cuda parity: packed_attention, forward and backward, masked keys and dropout on P") {
    const Tensor qkv = parity_values({2, 5, 12}, 49);  // D = 4
    const Tensor key_mask = length_mask({5, 3}, 5);
    for (int64_t heads : {1, 2})
        for (bool masked : {false, true})
            for (double p : {0.0, 0.3})
                check_parity_both(fmt::format("packed_attention heads {} masked {} dropout {}", heads, masked, p),
                                  [&, heads, masked, p](const std::vector<Var>& v, Device device) {
                                      Generator generator(17);
                                      generator.take(1);
                                      return packed_attention(v[0], masked ? key_mask.to(device) : Tensor(), heads, p,
                                                              p > 0 ? &generator : nullptr);
                                  },
                                  {qkv});
}
