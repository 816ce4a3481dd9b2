// Masked mean pooling, L2 normalisation and scaled dot-product attention: forward values
// against plain loops, the behaviour of padding and masks, gradients, and error messages.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "tests/test_helpers.h"

using namespace nce;
using nce::testing::kFloatDtypes;
using nce::testing::tolerance_for;

namespace {

// Runs every registered gradient check of `op` in both dtypes; each must pass.
void check_registered_gradients(const std::string& op) {
    CheckRegistry registry;
    register_engine_checks(registry);
    int cases = 0;
    for (const CheckCase& check : registry.cases()) {
        if (check.op != op) continue;
        ++cases;
        for (Dtype dtype : kFloatDtypes) {
            GradcheckResult result = run_check(check, dtype, 1);
            CHECK_MESSAGE(result.passed, op << " " << check.description << " in " << std::string(dtype_name(dtype))
                                            << ": max relative error " << result.max_rel_error);
        }
    }
    CHECK_MESSAGE(cases >= 2, op << " has " << cases << " registered gradient checks, expected two or more");
}

// y[b,:] = sum over t with mask[b,t] != 0 of x[b,t,:], divided by how many there are.
std::vector<double> naive_masked_mean_pool(const std::vector<double>& x, const std::vector<double>& mask,
                                           int64_t batch, int64_t tokens, int64_t features) {
    std::vector<double> y(static_cast<size_t>(batch * features), 0.0);
    for (int64_t b = 0; b < batch; ++b) {
        int64_t count = 0;
        for (int64_t t = 0; t < tokens; ++t) {
            if (mask[b * tokens + t] == 0) continue;
            ++count;
            for (int64_t d = 0; d < features; ++d) y[b * features + d] += x[(b * tokens + t) * features + d];
        }
        for (int64_t d = 0; d < features; ++d) y[b * features + d] /= static_cast<double>(count);
    }
    return y;
}

struct AttentionSizes {
    int64_t batch, heads, queries, keys, head_dim;
};

// Softmax attention with plain loops: probabilities [B,H,Tq,Tk] and output [B,H,Tq,dh].
// Masked keys (key_mask[b,j] == 0) are skipped, so their probability is 0 by construction.
struct NaiveAttention {
    std::vector<double> probabilities, output;
};
NaiveAttention naive_attention(const std::vector<double>& q, const std::vector<double>& k,
                               const std::vector<double>& v, const std::vector<double>& key_mask,
                               const AttentionSizes& s) {
    NaiveAttention result{std::vector<double>(static_cast<size_t>(s.batch * s.heads * s.queries * s.keys), 0.0),
                          std::vector<double>(static_cast<size_t>(s.batch * s.heads * s.queries * s.head_dim), 0.0)};
    const double scale = 1.0 / std::sqrt(static_cast<double>(s.head_dim));
    for (int64_t b = 0; b < s.batch; ++b)
        for (int64_t h = 0; h < s.heads; ++h) {
            int64_t head = b * s.heads + h;
            for (int64_t i = 0; i < s.queries; ++i) {
                std::vector<double> scores(static_cast<size_t>(s.keys), 0.0);
                double largest = -std::numeric_limits<double>::infinity();
                for (int64_t j = 0; j < s.keys; ++j) {
                    if (!key_mask.empty() && key_mask[b * s.keys + j] == 0) continue;
                    double dot = 0;
                    for (int64_t d = 0; d < s.head_dim; ++d)
                        dot += q[(head * s.queries + i) * s.head_dim + d] * k[(head * s.keys + j) * s.head_dim + d];
                    scores[j] = dot * scale;
                    largest = std::max(largest, scores[j]);
                }
                double total = 0;
                for (int64_t j = 0; j < s.keys; ++j) {
                    if (!key_mask.empty() && key_mask[b * s.keys + j] == 0) continue;
                    total += std::exp(scores[j] - largest);
                }
                for (int64_t j = 0; j < s.keys; ++j) {
                    if (!key_mask.empty() && key_mask[b * s.keys + j] == 0) continue;
                    double p = std::exp(scores[j] - largest) / total;
                    result.probabilities[(head * s.queries + i) * s.keys + j] = p;
                    for (int64_t d = 0; d < s.head_dim; ++d)
                        result.output[(head * s.queries + i) * s.head_dim + d] += p * v[(head * s.keys + j) * s.head_dim + d];
                }
            }
        }
    return result;
}

void check_close(const Tensor& actual, const std::vector<double>& expected, double tolerance) {
    REQUIRE(actual.numel() == static_cast<int64_t>(expected.size()));
    for (int64_t i = 0; i < actual.numel(); ++i)
        CHECK(actual.at(i) == doctest::Approx(expected[static_cast<size_t>(i)]).epsilon(tolerance).scale(1.0));
}

}  // namespace

// ---- masked_mean_pool ----

TEST_CASE("masked_mean_pool: each row is the mean of its valid tokens, for float and int64 masks") {
    Generator generator(11);
    const int64_t batch = 3, tokens = 4, features = 5;
    // Nonzero means token whatever its value: 2 and -1 count once, like 1.
    const std::vector<double> mask_values{1, 1, 0, 0, 0, 2, -1, 1, 1, 1, 1, 1};
    for (Dtype dtype : kFloatDtypes) {
        Tensor x = generator.normal({batch, tokens, features}, dtype);
        std::vector<double> expected = naive_masked_mean_pool(x.to_vector(), mask_values, batch, tokens, features);
        for (Dtype mask_dtype : {Dtype::Float32, Dtype::Float64, Dtype::Int64}) {
            Tensor mask = Tensor::from_vector(mask_values, {batch, tokens}, Dtype::Float64).to(mask_dtype);
            Var y = masked_mean_pool(Var(x), mask);
            CHECK(y.shape() == Shape{batch, features});
            CHECK(y.dtype() == dtype);
            check_close(y.value(), expected, tolerance_for(dtype));
        }
    }
}

TEST_CASE("masked_mean_pool: huge or NaN values at padding positions never reach the output") {
    const int64_t batch = 2, tokens = 3, features = 2;
    const std::vector<double> mask_values{1, 0, 1, 1, 1, 0};
    for (Dtype dtype : kFloatDtypes) {
        const double huge = 1e30, nan = std::numeric_limits<double>::quiet_NaN();
        std::vector<double> x_values{1, 2, huge, nan, 3, 4, 5, 6, 7, 8, nan, -huge};
        Tensor x = Tensor::from_vector(x_values, {batch, tokens, features}, dtype);
        Tensor mask = Tensor::from_vector(mask_values, {batch, tokens}, dtype);
        Var y = masked_mean_pool(Var(x), mask);
        CHECK(all_finite(y.value()));
        check_close(y.value(), {2, 3, 6, 7}, tolerance_for(dtype));  // (1+3)/2, (2+4)/2, (5+7)/2, (6+8)/2
    }
}

TEST_CASE("masked_mean_pool: dL/dx[b,t,:] = mask[b,t] / count_b · dL/dy[b,:], zero at padding") {
    Generator generator(12);
    const int64_t batch = 2, tokens = 4, features = 3;
    const std::vector<double> mask_values{1, 0, 1, 1, 0, 1, 0, 0};
    const double counts[] = {3, 1};
    for (Dtype dtype : kFloatDtypes) {
        Var x = Var::parameter(generator.normal({batch, tokens, features}, dtype));
        Tensor dy = generator.normal({batch, features}, dtype);
        masked_mean_pool(x, Tensor::from_vector(mask_values, {batch, tokens}, dtype)).backward(dy);
        std::vector<double> expected;
        for (int64_t b = 0; b < batch; ++b)
            for (int64_t t = 0; t < tokens; ++t)
                for (int64_t d = 0; d < features; ++d)
                    expected.push_back(mask_values[b * tokens + t] / counts[b] * dy.at(b * features + d));
        check_close(x.grad(), expected, tolerance_for(dtype));
    }
}

TEST_CASE("masked_mean_pool: hand backward equals finite differences") { check_registered_gradients("masked_mean_pool"); }

TEST_CASE("masked_mean_pool: bad input gives one clear error") {
    Tensor x = Tensor::zeros({2, 3, 4}, Dtype::Float32);
    CHECK_ERROR_MENTIONS(masked_mean_pool(Var(x), Tensor::from_vector({1, 1, 0, 0, 0, 0}, {2, 3}, Dtype::Float32)),
                         "row 1 of mask [2, 3] has no valid token; every row needs at least one token");
    CHECK_ERROR_MENTIONS(masked_mean_pool(Var(x), Tensor::full({3, 2}, 1.0, Dtype::Float32)),
                         "mask [3, 2] does not match x [2, 3, 4]; the mask must be [B, T] = [2, 3]");
    CHECK_ERROR_MENTIONS(masked_mean_pool(Var(Tensor::zeros({2, 3}, Dtype::Float32)), Tensor::full({2, 3}, 1.0, Dtype::Float32)),
                         "x must be [B, T, D], got [2, 3]");
    CHECK_ERROR_MENTIONS(masked_mean_pool(Var(x), Tensor()), "the mask is missing");
}

// ---- l2_normalize ----

TEST_CASE("l2_normalize: rows of any rank have unit norm and equal x / ||x||") {
    Generator generator(21);
    for (Dtype dtype : kFloatDtypes) {
        for (const Shape& shape : {Shape{6}, Shape{4, 5}, Shape{2, 3, 4}}) {
            Tensor x = generator.normal(shape, dtype);
            Tensor y = l2_normalize(Var(x)).value();
            REQUIRE(y.shape() == shape);
            int64_t row_length = shape.back(), rows = x.numel() / row_length;
            for (int64_t r = 0; r < rows; ++r) {
                double squared_norm = 0, unit_check = 0;
                for (int64_t i = 0; i < row_length; ++i) squared_norm += x.at(r * row_length + i) * x.at(r * row_length + i);
                for (int64_t i = 0; i < row_length; ++i) {
                    double expected = x.at(r * row_length + i) / std::sqrt(squared_norm);
                    CHECK(y.at(r * row_length + i) == doctest::Approx(expected).epsilon(tolerance_for(dtype)));
                    unit_check += y.at(r * row_length + i) * y.at(r * row_length + i);
                }
                CHECK(unit_check == doctest::Approx(1.0).epsilon(tolerance_for(dtype)));
            }
        }
    }
}

TEST_CASE("l2_normalize: a zero row gives zeros and the finite gradient dL/dy / eps, never NaN") {
    for (Dtype dtype : kFloatDtypes) {
        const double eps = 1e-12;
        Var x = Var::parameter(Tensor::from_vector({0, 0, 0, 3, 0, 4}, {2, 3}, dtype));
        Tensor dy = Tensor::from_vector({1, -2, 0.5, 1, 1, 1}, {2, 3}, dtype);
        Var y = l2_normalize(x, eps);
        check_close(y.value(), {0, 0, 0, 0.6, 0, 0.8}, tolerance_for(dtype));
        y.backward(dy);
        REQUIRE(all_finite(x.grad()));
        // Row 0 is below eps: dL/dx = dy / eps. Row 1 (norm 5): dL/dx = (dy - y <y, dy>) / 5, <y, dy> = 1.4.
        check_close(x.grad(), {1 / eps, -2 / eps, 0.5 / eps, (1 - 0.6 * 1.4) / 5, 1.0 / 5, (1 - 0.8 * 1.4) / 5},
                    tolerance_for(dtype));
    }
}

TEST_CASE("l2_normalize: hand backward equals finite differences") { check_registered_gradients("l2_normalize"); }

TEST_CASE("l2_normalize: bad input gives one clear error") {
    CHECK_ERROR_MENTIONS(l2_normalize(Var(Tensor::scalar(1.0, Dtype::Float64))), "l2_normalize: x must have at least one axis");
    CHECK_ERROR_MENTIONS(l2_normalize(Var(Tensor::zeros({2, 3}, Dtype::Float64)), 0.0), "eps must be positive");
    CHECK_ERROR_MENTIONS(l2_normalize(Var(Tensor::from_indices({1, 2}, {2}))), "must be float32 or float64, got int64");
}

// ---- scaled_dot_product_attention ----

TEST_CASE("attention: output equals softmax(q k^T / sqrt(dh)) v computed with loops, with and without a mask") {
    Generator generator(31);
    const AttentionSizes sizes{2, 3, 4, 5, 6};
    const std::vector<double> key_mask{1, 0, 1, 1, 0, 1, 1, 1, 1, 1};
    for (Dtype dtype : kFloatDtypes) {
        Tensor q = generator.normal({2, 3, 4, 6}, dtype), k = generator.normal({2, 3, 5, 6}, dtype),
               v = generator.normal({2, 3, 5, 6}, dtype);
        for (bool masked : {false, true}) {
            Tensor mask = masked ? Tensor::from_vector(key_mask, {2, 5}, dtype) : Tensor();
            Var output = scaled_dot_product_attention(Var(q), Var(k), Var(v), mask);
            CHECK(output.shape() == Shape{2, 3, 4, 6});
            NaiveAttention expected =
                naive_attention(q.to_vector(), k.to_vector(), v.to_vector(), masked ? key_mask : std::vector<double>{}, sizes);
            check_close(output.value(), expected.output, tolerance_for(dtype));
        }
    }
}

TEST_CASE("attention: with v the identity the output is P; masked keys get probability exactly 0") {
    // dh = Tk and v[b,h] = I, so O = P I = P: every entry of P is read directly.
    Generator generator(32);
    const AttentionSizes sizes{2, 2, 3, 4, 4};
    const std::vector<double> key_mask{1, 1, 0, 1, 0, 1, 0, 0};
    for (Dtype dtype : kFloatDtypes) {
        std::vector<double> identity;
        for (int64_t head = 0; head < 4; ++head)
            for (int64_t j = 0; j < 4; ++j)
                for (int64_t d = 0; d < 4; ++d) identity.push_back(j == d ? 1.0 : 0.0);
        Tensor q = generator.normal({2, 2, 3, 4}, dtype) * 3.0, k = generator.normal({2, 2, 4, 4}, dtype);
        Tensor v = Tensor::from_vector(identity, {2, 2, 4, 4}, dtype);
        for (Dtype mask_dtype : {Dtype::Float32, Dtype::Float64, Dtype::Int64}) {
            Tensor mask = Tensor::from_vector(key_mask, {2, 4}, Dtype::Float64).to(mask_dtype);
            Tensor probabilities = scaled_dot_product_attention(Var(q), Var(k), Var(v), mask).value();
            NaiveAttention expected = naive_attention(q.to_vector(), k.to_vector(), identity, key_mask, sizes);
            check_close(probabilities, expected.probabilities, tolerance_for(dtype));
            for (int64_t row = 0; row < 2 * 2 * 3; ++row) {
                int64_t b = row / (2 * 3);
                double total = 0;
                for (int64_t j = 0; j < 4; ++j) {
                    double p = probabilities.at(row * 4 + j);
                    total += p;
                    if (key_mask[b * 4 + j] == 0) CHECK(p == 0.0);  // exactly, not approximately
                    else CHECK(p > 0.0);
                }
                CHECK(total == doctest::Approx(1.0).epsilon(tolerance_for(dtype)));
            }
        }
    }
}

TEST_CASE("attention: padded keys change nothing; the result equals attention over the real keys alone") {
    Generator generator(33);
    const int64_t heads = 2, queries = 3, keys = 5, head_dim = 4;
    const int64_t real_keys[] = {2, 5};  // batch entry 0 has its last 3 keys padded
    for (Dtype dtype : kFloatDtypes) {
        Tensor q = generator.normal({2, heads, queries, head_dim}, dtype);
        std::vector<double> k_values = generator.normal({2, heads, keys, head_dim}, Dtype::Float64).to_vector();
        std::vector<double> v_values = generator.normal({2, heads, keys, head_dim}, Dtype::Float64).to_vector();
        // Huge values at the padded keys: any probability that is not exactly 0 would show.
        for (int64_t h = 0; h < heads; ++h)
            for (int64_t j = real_keys[0]; j < keys; ++j)
                for (int64_t d = 0; d < head_dim; ++d) {
                    k_values[((0 * heads + h) * keys + j) * head_dim + d] = 1e6;
                    v_values[((0 * heads + h) * keys + j) * head_dim + d] = 1e30;
                }
        Var k = Var::parameter(Tensor::from_vector(k_values, {2, heads, keys, head_dim}, dtype));
        Var v = Var::parameter(Tensor::from_vector(v_values, {2, heads, keys, head_dim}, dtype));
        Tensor mask = Tensor::from_vector({1, 1, 0, 0, 0, 1, 1, 1, 1, 1}, {2, keys}, dtype);
        Var output = scaled_dot_product_attention(Var(q), k, v, mask);
        REQUIRE(all_finite(output.value()));
        for (int64_t b = 0; b < 2; ++b) {
            Tensor alone = scaled_dot_product_attention(Var(slice(q, 0, b, b + 1)),
                                                        Var(slice(slice(k.value(), 0, b, b + 1), 2, 0, real_keys[b])),
                                                        Var(slice(slice(v.value(), 0, b, b + 1), 2, 0, real_keys[b])),
                                                        Tensor())
                               .value();
            CHECK(max_abs_difference(slice(output.value(), 0, b, b + 1), alone) <= tolerance_for(dtype));
        }
        // The padded keys never reached the output, so they get exactly zero gradient.
        output.backward(Tensor::full(output.shape(), 1.0, dtype));
        for (const Tensor& grad : {k.grad(), v.grad()})
            for (int64_t h = 0; h < heads; ++h)
                for (int64_t j = real_keys[0]; j < keys; ++j)
                    for (int64_t d = 0; d < head_dim; ++d) CHECK(grad.at(((0 * heads + h) * keys + j) * head_dim + d) == 0.0);
    }
}

TEST_CASE("attention: hand backward equals finite differences") { check_registered_gradients("attention"); }

TEST_CASE("attention: bad input gives one clear error") {
    auto zeros = [](const Shape& shape) { return Var(Tensor::zeros(shape, Dtype::Float64)); };
    Var q = zeros({2, 2, 3, 4}), k = zeros({2, 2, 5, 4}), v = zeros({2, 2, 5, 4});
    CHECK_ERROR_MENTIONS(
        scaled_dot_product_attention(q, k, v, Tensor::from_vector({1, 1, 0, 0, 1, 0, 0, 0, 0, 0}, {2, 5}, Dtype::Float64)),
        "batch entry 1 has all 5 keys masked");
    CHECK_ERROR_MENTIONS(scaled_dot_product_attention(q, k, v, Tensor::zeros({2, 4}, Dtype::Float64)),
                         "key_padding_mask [2, 4] does not match the keys; it must be [B, Tk] = [2, 5]");
    CHECK_ERROR_MENTIONS(scaled_dot_product_attention(q, zeros({2, 2, 5, 3}), zeros({2, 2, 5, 3}), Tensor()),
                         "q [2, 2, 3, 4] and k [2, 2, 5, 3] must agree on B, H and dh");
    CHECK_ERROR_MENTIONS(scaled_dot_product_attention(q, k, zeros({2, 2, 4, 4}), Tensor()),
                         "k [2, 2, 5, 4] and v [2, 2, 4, 4] must have the same shape");
    CHECK_ERROR_MENTIONS(scaled_dot_product_attention(zeros({2, 3, 4}), k, v, Tensor()), "must be [B, H, T, dh], got q [2, 3, 4]");
    CHECK_ERROR_MENTIONS(scaled_dot_product_attention(q, Var(Tensor::zeros({2, 2, 5, 4}, Dtype::Float32)), v, Tensor()),
                         "q, k, v must share one dtype, got float64, float32, float64");
}

// ---- packed_attention ----

// The composition packed_attention replaces, from engine ops: q, k, v sliced out of qkv,
// heads permuted out, S = q k^T · scale with -inf at masked keys, softmax, dropout from the
// generator, P v, heads permuted back.
Var composed_packed_attention(const Var& qkv, const Tensor& key_padding_mask, int64_t heads, double p,
                              Generator& generator) {
    const int64_t batch = qkv.size(0), tokens = qkv.size(1), dim = qkv.size(2) / 3, head_dim = dim / heads;
    auto head_major = [&](int64_t part) {  // [B, T, D] -> [B*H, T, dh]
        Var projected = slice(qkv, 2, part * dim, (part + 1) * dim);
        return reshape(permute(reshape(projected, {batch, tokens, heads, head_dim}), {0, 2, 1, 3}),
                       {batch * heads, tokens, head_dim});
    };
    Var q = head_major(0), k = head_major(1), v = head_major(2);
    Var scores = matmul(q, k, Transpose::Second) * (1.0 / std::sqrt(static_cast<double>(head_dim)));
    scores = reshape(scores, {batch, heads, tokens, tokens});
    if (key_padding_mask.defined()) {
        Tensor mask = key_padding_mask.to(qkv.dtype()).reshape({batch, 1, 1, tokens});
        scores = add(scores, Var(keep_where(zeros_like(mask), mask, -std::numeric_limits<double>::infinity())));
    }
    Var probabilities = softmax(scores);
    if (p > 0) probabilities = dropout(probabilities, p, generator, true);
    Var output = matmul(reshape(probabilities, {batch * heads, tokens, tokens}), v);  // [B*H, T, dh]
    return reshape(permute(reshape(output, {batch, heads, tokens, head_dim}), {0, 2, 1, 3}), {batch, tokens, dim});
}

TEST_CASE("packed_attention: equals the composition of engine ops, forward and backward, masks and dropout") {
    struct Case {
        Shape qkv;
        int64_t heads;
        double p;
        bool masked;
    };
    for (const Case& c : {Case{{2, 5, 24}, 2, 0.0, false}, Case{{3, 7, 24}, 4, 0.0, true},
                          Case{{2, 6, 36}, 3, 0.25, true}, Case{{4, 16, 48}, 4, 0.1, false},
                          Case{{1, 9, 6}, 1, 0.5, true},
                          // T odd: every other head's P block starts at an odd element of the fill
                          Case{{3, 5, 24}, 2, 0.2, true}}) {
        for (Dtype dtype : kFloatDtypes) {
            Generator data(3);
            Tensor packed = data.normal(c.qkv, dtype);
            Tensor upstream = data.normal({c.qkv[0], c.qkv[1], c.qkv[2] / 3}, dtype);
            Tensor key_padding_mask;
            if (c.masked) {  // row b keeps its first T - b tokens
                std::vector<double> mask(static_cast<size_t>(c.qkv[0] * c.qkv[1]), 0.0);
                for (int64_t b = 0; b < c.qkv[0]; ++b)
                    for (int64_t t = 0; t < c.qkv[1] - b; ++t) mask[static_cast<size_t>(b * c.qkv[1] + t)] = 1.0;
                key_padding_mask = Tensor::from_vector(mask, {c.qkv[0], c.qkv[1]}, Dtype::Float32);
            }
            Var fused_input = Var::parameter(packed.clone()), composed_input = Var::parameter(packed.clone());
            Generator fused_generator(17), composed_generator(17);
            Var fused = packed_attention(fused_input, key_padding_mask, c.heads, c.p, &fused_generator);
            Var composed = composed_packed_attention(composed_input, key_padding_mask, c.heads, c.p, composed_generator);
            fused.backward(upstream);
            composed.backward(upstream);
            std::string what = shape_string(c.qkv) + " heads " + std::to_string(c.heads) + " p " +
                               std::to_string(c.p) + (c.masked ? " masked " : " ") + dtype_name(dtype);
            const double tolerance = dtype == Dtype::Float64 ? 1e-12 : 1e-5;
            CHECK_MESSAGE(allclose(fused.value(), composed.value(), tolerance, tolerance), "output " << what);
            CHECK_MESSAGE(allclose(fused_input.grad(), composed_input.grad(), tolerance, tolerance), "dqkv " << what);
            CHECK_MESSAGE(fused_generator.offset() == composed_generator.offset(), "draws consumed " << what);
        }
    }
}

TEST_CASE("packed_attention: hand backward equals finite differences") {
    check_registered_gradients("packed_attention");
}

TEST_CASE("packed_attention: bad input gives one clear error") {
    Var qkv(Tensor::zeros({2, 3, 12}, Dtype::Float64));
    Generator generator(1);
    CHECK_ERROR_MENTIONS(packed_attention(qkv, Tensor(), 5, 0.0, nullptr), "D divisible by heads = 5");
    CHECK_ERROR_MENTIONS(packed_attention(Var(Tensor::zeros({2, 12}, Dtype::Float64)), Tensor(), 2, 0.0, nullptr),
                         "qkv must be [B, T >= 1, 3D]");
    CHECK_ERROR_MENTIONS(packed_attention(qkv, Tensor(), 2, 0.1, nullptr), "needs a generator");
    CHECK_ERROR_MENTIONS(packed_attention(qkv, Tensor(), 2, 1.0, &generator), "dropout must be in [0, 1)");
    CHECK_ERROR_MENTIONS(packed_attention(qkv, Tensor::zeros({2, 4}, Dtype::Float64), 2, 0.0, nullptr),
                         "key_padding_mask [2, 4] must be [B, T] = [2, 3]");
    CHECK_ERROR_MENTIONS(
        packed_attention(qkv, Tensor::from_vector({1, 0, 0, 0, 0, 0}, {2, 3}, Dtype::Float64), 2, 0.0, nullptr),
        "row 1 of key_padding_mask [2, 3] has no real token");
}

// A masked key is -inf in the scores, and its probability must be exactly 0 (not the denormal
// a clamped vectorised exp would give): its value row then contributes nothing at all.
TEST_CASE("packed attention: a masked key gets probability exactly 0, in both dtypes") {
    for (Dtype dtype : {Dtype::Float64, Dtype::Float32}) {
        Generator generator(31);
        const int64_t batch = 2, tokens = 9, width = 8, heads = 2;
        Tensor qkv = generator.normal({batch, tokens, 3 * width}, dtype);
        std::vector<double> mask_values(batch * tokens, 1.0);
        for (int64_t t = 5; t < tokens; ++t) mask_values[t] = 0.0;  // batch entry 0: keys 5.. are padding
        Tensor mask = Tensor::from_vector(mask_values, {batch, tokens}, dtype);
        PackedAttention attention;
        attention.heads = heads;
        auto [out, probabilities] = packed_attention(qkv, mask, attention);
        std::vector<double> p = probabilities.to_vector();  // [B, H, T, T]
        for (int64_t h = 0; h < heads; ++h)
            for (int64_t i = 0; i < tokens; ++i)
                for (int64_t j = 5; j < tokens; ++j) CHECK(p[((0 * heads + h) * tokens + i) * tokens + j] == 0.0);
    }
}
