// The bfloat16 GEMM precision (engine/gemm_precision.h, engine/cpu/gemm_bfloat16.h): the
// rounding, the GEMM against a naive reference, the ops that run GEMMs held to error bounds
// derived from bfloat16's rounding, the setting restored and float64 untouched.
//
// The bounds. u = 2^-8: rounding to bfloat16 (8 significant bits, to nearest) moves x by at
// most u |x|. u32 = 2^-24, float32's. A product op(X)·op(Y) of inner size k computed in
// bfloat16 mode from X and Y that already carry errors bounded elementwise by EX and EY:
//
//   |computed - exact| <= EX |Y| + |X| EY + EX EY + c_k (|X| + EX)(|Y| + EY),
//   c_k = (1 + u)^2 (1 + (k + 3) u32) - 1
//
// The first three terms carry the inputs' errors through the product (exactly, no first-order
// cut); the last rounds both operands (1 + u each; their product is exact in float32) and
// sums k products in float32 in any order (at most k roundings of 1 + u32 each), plus alpha's
// and beta's roundings. A softmax whose inputs carry errors E (row-wise; |delta_ij| <= E_ij):
// P'_ij / P_ij = e^delta_ij / sum_l P_il e^delta_il, so
//
//   |P' - P|_ij <= P_ij max( e^E_ij / sum_l P_il e^-E_il - 1,  1 - e^-E_ij / sum_l P_il e^E_il )
//
// plus 16 u32 P for float32's own exp and division. Each op below chains these rules along its
// forward and backward (the backwards of docs/derivations/), so the bound is a worst case
// over rounding errors, not a fit to what was measured; a test then also checks the mode
// reaches the op (its bfloat16 error is far above its float32 error).
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "engine/blas.h"
#include "engine/cpu/gemm_bfloat16.h"
#include "losses/infonce.h"
#include "tests/test_helpers.h"

using namespace nce;

namespace {

constexpr double kUnit = 1.0 / 256;             // 2^-8, bfloat16's rounding
constexpr double kUnit32 = 1.0 / (1 << 24);     // 2^-24, float32's

// bfloat16 rounding computed apart from the engine's bit trick: the significand scaled to 8
// bits, rounded to nearest even by nearbyint (the default rounding mode), scaled back.
double reference_bfloat16(double x) {
    if (x == 0 || !std::isfinite(x)) return x;
    int exponent;
    double fraction = std::frexp(x, &exponent);  // x = fraction · 2^exponent, 0.5 <= |fraction| < 1
    return std::ldexp(std::nearbyint(std::ldexp(fraction, 8)), exponent - 8);
}

// oneDNN makes bfloat16 matmuls on CPUs with AVX-512 or newer only. Elsewhere (an AVX2 machine)
// the mode is refused with one message naming the CPU and the fix. Then the cases that need
// the mode check that message, say they were skipped, and stop.
bool bfloat16_gemm_runs_here() {
    try {
        cpu::check_bfloat16_gemm_available();
        return true;
    } catch (const std::exception& refusal) {
        const std::string message = refusal.what();
        CHECK(message.find("oneDNN cannot make a bfloat16 matmul on this CPU") != std::string::npos);
        CHECK(message.find("use --gemm-precision float32") != std::string::npos);
        MESSAGE("skipped, bfloat16 GEMM is not available here: ", message);
        return false;
    }
}

double rounded_product_factor(int64_t k) { return (1 + kUnit) * (1 + kUnit) * (1 + (k + 3) * kUnit32) - 1; }

// float64 values that float32 holds exactly, so both dtypes see the same inputs.
Tensor float32_values(Generator& generator, const Shape& shape, double scale = 1.0) {
    return (generator.normal(shape, Dtype::Float64) * scale).to(Dtype::Float32).to(Dtype::Float64);
}

// ---------------------------------------------------------------- the GEMM against a reference

struct GemmCase {
    bool transpose_a, transpose_b;
    int64_t m, n, k, padding;  // padding: extra columns in every leading dimension
    float alpha, beta;
};

// Runs blas_gemm<float> (or its one-thread form) on float32 data in bfloat16 mode and checks
// each element of C against alpha·sum bf16(a)·bf16(b) + beta·c0 summed in float64, to within
// (k + 3) u32 (|alpha| sum |bf16(a) bf16(b)| + |beta c0|): float32 rounding of the sum.
// Returns the worst |error| / bound.
double check_against_reference(const GemmCase& c, bool on_this_thread, Generator& generator) {
    int64_t a_rows = c.transpose_a ? c.k : c.m, a_cols = c.transpose_a ? c.m : c.k;
    int64_t b_rows = c.transpose_b ? c.n : c.k, b_cols = c.transpose_b ? c.k : c.n;
    int64_t lda = a_cols + c.padding, ldb = b_cols + c.padding, ldc = c.n + c.padding;
    auto draw = [&](int64_t count) {
        std::vector<double> values = generator.normal({count}, Dtype::Float64).to_vector();
        return std::vector<float>(values.begin(), values.end());
    };
    std::vector<float> a = draw(a_rows * lda), b = draw(b_rows * ldb), c0 = draw(c.m * ldc), out = c0;
    GemmPrecisionScope bfloat16(GemmPrecision::BFloat16);
    auto gemm = on_this_thread ? blas_gemm_on_this_thread<float> : blas_gemm<float>;
    gemm(c.transpose_a, c.transpose_b, c.m, c.n, c.k, c.alpha, a.data(), lda, b.data(), ldb, c.beta, out.data(), ldc);

    // op(A) [m, k] and op(B)^T [n, k] rounded by the reference, row-major, so each sum reads rows.
    std::vector<double> a_rounded(c.m * c.k), b_rounded(c.n * c.k);
    for (int64_t i = 0; i < c.m; ++i)
        for (int64_t l = 0; l < c.k; ++l)
            a_rounded[i * c.k + l] = reference_bfloat16(c.transpose_a ? a[l * lda + i] : a[i * lda + l]);
    for (int64_t j = 0; j < c.n; ++j)
        for (int64_t l = 0; l < c.k; ++l)
            b_rounded[j * c.k + l] = reference_bfloat16(c.transpose_b ? b[j * ldb + l] : b[l * ldb + j]);
    double worst = 0;
    for (int64_t i = 0; i < c.m; ++i)
        for (int64_t j = 0; j < c.n; ++j) {
            double sum = 0, magnitude = 0;
            for (int64_t l = 0; l < c.k; ++l) {
                double product = a_rounded[i * c.k + l] * b_rounded[j * c.k + l];
                sum += product;
                magnitude += std::abs(product);
            }
            double c_old = c0[i * ldc + j];
            double expected = c.alpha * sum + (c.beta == 0 ? 0.0 : c.beta * c_old);
            double bound = (c.k + 3) * kUnit32 * (std::abs(c.alpha) * magnitude + std::abs(c.beta * c_old));
            worst = std::max(worst, std::abs(out[i * ldc + j] - expected) / bound);
        }
    // C's padding is never written.
    for (int64_t i = 0; i < c.m; ++i)
        for (int64_t j = c.n; j < ldc; ++j) CHECK(std::memcmp(&out[i * ldc + j], &c0[i * ldc + j], sizeof(float)) == 0);
    return worst;
}

// ---------------------------------------------------------------- bounds for the ops

// The product rule of the header: op(x)·op(y) with x, y exact (float64) and errors ex, ey.
Tensor product_bound(const Tensor& x, const Tensor& ex, const Tensor& y, const Tensor& ey, Transpose transpose) {
    bool first = transpose == Transpose::First || transpose == Transpose::Both;
    int64_t k = first ? x.size(-2) : x.size(-1);
    Tensor ax = abs(x), ay = abs(y);
    return matmul(ex, ay, transpose) + matmul(ax, ey, transpose) + matmul(ex, ey, transpose) +
           matmul(ax + ex, ay + ey, transpose) * rounded_product_factor(k);
}

Tensor exact(const Tensor& x) { return zeros_like(x); }  // the error bound of an exact input

// The softmax rule of the header, over the last axis: p = softmax(s), s carries errors es.
Tensor softmax_bound(const Tensor& p, const Tensor& es) {
    Tensor up = exp(es) / sum(p * exp(-es), -1, true) - 1.0;
    Tensor down = 1.0 - exp(-es) / sum(p * exp(es), -1, true);
    return p * maximum(up, down) + p * (16 * kUnit32);
}

struct AttentionBounds {
    Tensor output, dq, dk, dv;
};

// Attention per batch entry, q, k, v [BH, T, dh] exact, upstream gradient w [BH, T, dh] exact:
//   s = c q k^T, P = softmax(s), o = P v;  dv = P^T w, dP = w v^T,
//   ds = P ∘ (dP - r), r = rowsum(dP ∘ P);  dq = c ds k, dk = c ds^T q
// each line's error from the rules above (r and ds: the product rule written out elementwise).
AttentionBounds attention_bounds(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& w) {
    double c = 1.0 / std::sqrt(double(q.size(-1)));
    Tensor s = matmul(q, k, Transpose::Second) * c, p = softmax(s);
    Tensor es = product_bound(q, exact(q), k, exact(k), Transpose::Second) * c + abs(s) * kUnit32;
    Tensor ep = softmax_bound(p, es);
    Tensor dp = matmul(w, v, Transpose::Second), edp = product_bound(w, exact(w), v, exact(v), Transpose::Second);
    Tensor r = sum(dp * p, -1, true);
    Tensor er = sum(edp * (p + ep) + abs(dp) * ep + abs(dp * p) * ((q.size(-2) + 1) * kUnit32), -1, true);
    Tensor ds = p * (dp - r);
    Tensor eds = ep * abs(dp - r) + (p + ep) * (edp + er) + abs(ds) * (4 * kUnit32);
    return {product_bound(p, ep, v, exact(v), Transpose::None),
            product_bound(ds, eds, k, exact(k), Transpose::None) * c + abs(matmul(ds, k)) * (c * kUnit32),
            product_bound(ds, eds, q, exact(q), Transpose::First) * c + abs(matmul(ds, q, Transpose::First)) * (c * kUnit32),
            product_bound(p, ep, w, exact(w), Transpose::First)};
}

// One run of an op on float64 inputs converted to `dtype`, L = sum(output ∘ w) (w exact),
// under a GEMM precision: the output and every input's gradient, as float64.
struct Run {
    Tensor output;
    std::vector<Tensor> grads;
};
using Op = std::function<Var(const std::vector<Var>&)>;
Run run(const Op& op, const std::vector<Tensor>& inputs, const Tensor& w, Dtype dtype, GemmPrecision precision) {
    GemmPrecisionScope scope(precision);
    std::vector<Var> leaves;
    for (const Tensor& input : inputs) leaves.push_back(Var::parameter(input.to(dtype)));
    Var output = op(leaves);
    Var loss = w.defined() ? sum(output * Var(w.to(dtype))) : output;
    loss.backward();
    Run result{output.value().to(Dtype::Float64), {}};
    for (const Var& leaf : leaves) result.grads.push_back(leaf.grad().to(Dtype::Float64));
    return result;
}

// What a bfloat16-mode value is held to: its bound, and, when a GEMM computes it, that the
// mode reached it: its error at least 8 times the float32 mode's (which is ~2^16 smaller).
struct Expected {
    std::string what;
    Tensor bound;
    bool through_gemm = true;
};

void check_within_bound(const Expected& expected, const Tensor& bfloat16, const Tensor& float32,
                        const Tensor& exact_value) {
    Tensor error = abs(bfloat16 - exact_value);
    double worst = max(error / (expected.bound + 1e-300)).item();
    double bfloat16_error = max(error).item(), float32_error = max(abs(float32 - exact_value)).item();
    CHECK_MESSAGE(worst <= 1.0, expected.what << ": error " << bfloat16_error << " exceeds its bound (worst ratio "
                                              << worst << ")");
    if (expected.through_gemm)
        CHECK_MESSAGE(bfloat16_error >= 8 * float32_error, expected.what << ": bfloat16 error " << bfloat16_error
                                                                         << " vs float32 " << float32_error
                                                                         << ": the bfloat16 mode does not reach it");
    MESSAGE(expected.what << ": bfloat16 error " << bfloat16_error << ", worst error/bound " << worst);
}

// Runs op in float64, float32 and bfloat16 and checks the output (expected[0]) and the
// gradient of each input (expected[1 + i]).
void check_op(const Op& op, const std::vector<Tensor>& inputs, const Tensor& w, const std::vector<Expected>& expected) {
    Run exact_run = run(op, inputs, w, Dtype::Float64, GemmPrecision::Float32);
    Run float32_run = run(op, inputs, w, Dtype::Float32, GemmPrecision::Float32);
    Run bfloat16_run = run(op, inputs, w, Dtype::Float32, GemmPrecision::BFloat16);
    REQUIRE(expected.size() == inputs.size() + 1);
    check_within_bound(expected[0], bfloat16_run.output, float32_run.output, exact_run.output);
    for (size_t i = 0; i < inputs.size(); ++i)
        check_within_bound(expected[i + 1], bfloat16_run.grads[i], float32_run.grads[i], exact_run.grads[i]);
}

}  // namespace

TEST_CASE("round_to_bfloat16 rounds to nearest with ties to even, keeps NaN, overflows to infinity") {
    using cpu::round_to_bfloat16, cpu::bfloat16_to_float;
    auto rounded = [](double x) { return double(bfloat16_to_float(round_to_bfloat16(float(x)))); };
    CHECK(rounded(1.0) == 1.0);
    CHECK(rounded(1 + 0x1p-8) == 1.0);                    // a tie: to the even 1.0
    CHECK(rounded(1 + 3 * 0x1p-8) == 1 + 0x1p-6);          // a tie: to the even 1 + 2^-6, up
    CHECK(rounded(1 + 0x1p-8 + 0x1p-20) == 1 + 0x1p-7);    // just above the tie: up
    CHECK(rounded(-(1 + 0x1p-8 + 0x1p-20)) == -(1 + 0x1p-7));
    CHECK(rounded(0x1.ffp127) == std::numeric_limits<double>::infinity());  // above the largest bfloat16
    CHECK(std::isinf(rounded(-std::numeric_limits<float>::infinity())));
    CHECK(std::isnan(rounded(std::numeric_limits<float>::quiet_NaN())));
    CHECK(std::isnan(bfloat16_to_float(round_to_bfloat16(std::bit_cast<float>(0x7f800001u)))));  // payload in the dropped bits
    Generator generator(11);
    for (double x : generator.normal({20000}, Dtype::Float64, 0, 1000).to_vector()) {
        float value = float(x);
        REQUIRE_MESSAGE(rounded(value) == reference_bfloat16(value), "x = " << value);
    }
}

TEST_CASE("bfloat16 GEMM equals a float64 sum of bfloat16-rounded operands to float32 rounding") {
    if (!bfloat16_gemm_runs_here()) return;
    Generator generator(3);
    // Sizes: one element, odd shapes, and past the split threshold: 150 x 70 x 200 is cut
    // into row pieces, 20 x 300 x 400 into column pieces (too few rows for two pieces).
    struct Size {
        int64_t m, n, k;
    };
    for (Size size : {Size{1, 1, 1}, Size{7, 13, 5}, Size{33, 17, 70}, Size{150, 70, 200}, Size{20, 300, 400}})
        for (int transposes = 0; transposes < 4; ++transposes)
            for (auto [alpha, beta] : {std::pair{1.0f, 0.0f}, {0.37f, 1.0f}, {-1.5f, 0.5f}})
                for (int64_t padding : {0, 3})
                    for (bool on_this_thread : {false, true}) {
                        bool large = size.m * size.n * size.k > 100000;  // the split sizes: fewer variants
                        if (large && (padding != (beta == 0 ? 0 : 3) || alpha == -1.5f || on_this_thread)) continue;
                        GemmCase c{bool(transposes & 1), bool(transposes & 2), size.m, size.n, size.k, padding,
                                   alpha, beta};
                        INFO(c.m << " x " << c.n << " x " << c.k << ", transposes " << c.transpose_a
                                  << c.transpose_b << ", alpha " << alpha << ", beta " << beta << ", padding "
                                  << padding << ", on this thread " << on_this_thread);
                        CHECK(check_against_reference(c, on_this_thread, generator) <= 1.0);
                    }
}

TEST_CASE("bfloat16 matmul through tensor_math: batched and shared operands, every transpose, same bits twice") {
    if (!bfloat16_gemm_runs_here()) return;
    Generator generator(5);
    GemmPrecisionScope bfloat16(GemmPrecision::BFloat16);
    for (auto [a_shape, b_shape] : {std::pair{Shape{3, 5, 7}, Shape{7, 4}}, {Shape{3, 5, 7}, Shape{3, 7, 4}},
                                    {Shape{1, 6, 9}, Shape{9, 2}}})
        for (Transpose transpose : {Transpose::None, Transpose::First, Transpose::Second, Transpose::Both}) {
            bool ta = transpose == Transpose::First || transpose == Transpose::Both;
            bool tb = transpose == Transpose::Second || transpose == Transpose::Both;
            Shape as = a_shape, bs = b_shape;
            if (ta) std::swap(as[as.size() - 1], as[as.size() - 2]);
            if (tb) std::swap(bs[bs.size() - 1], bs[bs.size() - 2]);
            Tensor a = float32_values(generator, as).to(Dtype::Float32), b = float32_values(generator, bs).to(Dtype::Float32);
            Tensor c = matmul(a, b, transpose);
            CHECK(max_abs_difference(c, matmul(a, b, transpose)) == 0);
            // The reference: float64 matmul of the operands rounded by reference_bfloat16.
            auto round_all = [](const Tensor& x) {
                std::vector<double> values = x.to_vector();
                for (double& value : values) value = reference_bfloat16(value);
                return Tensor::from_vector(values, x.shape(), Dtype::Float64);
            };
            Tensor expected = matmul(round_all(a), round_all(b), transpose);
            Tensor magnitude = matmul(abs(round_all(a)), abs(round_all(b)), transpose);
            int64_t k = a_shape.back();
            CHECK(max(abs(c.to(Dtype::Float64) - expected) - magnitude * ((k + 3) * kUnit32)).item() <= 0);
        }
}

TEST_CASE("gemm precision: a scope restores the setting, float64 is untouched, float32 mode is OpenBLAS again") {
    if (!bfloat16_gemm_runs_here()) return;
    Generator generator(9);
    REQUIRE(gemm_precision() == GemmPrecision::Float32);
    Tensor a64 = generator.normal({40, 30}, Dtype::Float64), b64 = generator.normal({30, 50}, Dtype::Float64);
    Tensor a32 = a64.to(Dtype::Float32), b32 = b64.to(Dtype::Float32);
    Tensor q = generator.normal({16, 8}, Dtype::Float64), p = generator.normal({16, 8}, Dtype::Float64);
    auto infonce_grad = [&] {
        Var qv = Var::parameter(q.clone()), pv = Var::parameter(p.clone());
        losses::infonce(qv, pv, Var(), Var(), 0.1).backward();
        return qv.grad();
    };
    Tensor before64 = matmul(a64, b64), before32 = matmul(a32, b32), grad_before = infonce_grad();
    Tensor during32;
    {
        GemmPrecisionScope bfloat16(GemmPrecision::BFloat16);
        CHECK(gemm_precision() == GemmPrecision::BFloat16);
        CHECK(max_abs_difference(matmul(a64, b64), before64) == 0);
        CHECK(max_abs_difference(infonce_grad(), grad_before) == 0);
        during32 = matmul(a32, b32);
    }
    CHECK(gemm_precision() == GemmPrecision::Float32);
    CHECK(max_abs_difference(during32, before32) > 0);  // the mode was on
    CHECK(max_abs_difference(matmul(a32, b32), before32) == 0);
    CHECK(parse_gemm_precision("bfloat16") == GemmPrecision::BFloat16);
    CHECK_ERROR_MENTIONS(parse_gemm_precision("fp16"), "use float32 or bfloat16");
    MESSAGE("oneDNN ISA " << std::string(onednn_cpu_isa()) << ", bfloat16 matmul " << bfloat16_gemm_implementation());
}

TEST_CASE("bfloat16 mode: matmul and affine outputs and gradients within the rounding bound") {
    if (!bfloat16_gemm_runs_here()) return;
    Generator generator(13);
    Tensor a = float32_values(generator, {12, 40}), b = float32_values(generator, {40, 9});
    Tensor w = float32_values(generator, {12, 9});
    // y = a b; dA = w b^T, dB = a^T w.
    check_op([](const std::vector<Var>& v) { return matmul(v[0], v[1]); }, {a, b}, w,
             {{"matmul y", product_bound(a, exact(a), b, exact(b), Transpose::None)},
              {"matmul dA", product_bound(w, exact(w), b, exact(b), Transpose::Second)},
              {"matmul dB", product_bound(a, exact(a), w, exact(w), Transpose::First)}});

    // y = x W^T + bias (the GEMM adds onto the bias: beta = 1); dx = w W, dW = w^T x, dbias = the
    // column sums of w (float32 sums of 12 terms, no GEMM).
    Tensor x = float32_values(generator, {12, 40}), weight = float32_values(generator, {9, 40});
    Tensor bias = float32_values(generator, {9});
    Tensor bias_rows = matmul(Tensor::full({12, 1}, 1.0, Dtype::Float64), bias.reshape({1, 9}));
    check_op([](const std::vector<Var>& v) { return affine(v[0], v[1], v[2]); }, {x, weight, bias}, w,
             {{"affine y", product_bound(x, exact(x), weight, exact(weight), Transpose::Second) +
                               abs(bias_rows) * (43 * kUnit32)},
              {"affine dx", product_bound(w, exact(w), weight, exact(weight), Transpose::None)},
              {"affine dW", product_bound(w, exact(w), x, exact(x), Transpose::First)},
              {"affine dbias", sum(abs(w), 0) * (13 * kUnit32), false}});
}

TEST_CASE("bfloat16 mode: attention and packed_attention outputs and gradients within the rounding bound") {
    if (!bfloat16_gemm_runs_here()) return;
    Generator generator(17);
    const int64_t batch = 2, heads = 2, tokens = 6, head_dim = 8, dim = heads * head_dim;
    Shape four{batch, heads, tokens, head_dim}, three{batch * heads, tokens, head_dim};
    Tensor q = float32_values(generator, four), k = float32_values(generator, four), v = float32_values(generator, four);
    Tensor w = float32_values(generator, four);
    AttentionBounds bounds = attention_bounds(q.reshape(three), k.reshape(three), v.reshape(three), w.reshape(three));
    check_op([](const std::vector<Var>& x) { return scaled_dot_product_attention(x[0], x[1], x[2], Tensor()); },
             {q, k, v}, w,
             {{"attention output", bounds.output.reshape(four)}, {"attention dq", bounds.dq.reshape(four)},
              {"attention dk", bounds.dk.reshape(four)}, {"attention dv", bounds.dv.reshape(four)}});

    // packed: qkv [B, T, 3D], head h of q at columns [h dh, (h+1) dh) of the first D.
    Tensor qkv = float32_values(generator, {batch, tokens, 3 * dim}), wp = float32_values(generator, {batch, tokens, dim});
    auto head_major = [&](const Tensor& x) {  // [B, T, H·dh] -> [B·H, T, dh]
        return permute(x.reshape({batch, tokens, heads, head_dim}), {0, 2, 1, 3}).reshape(three);
    };
    auto token_major = [&](const Tensor& x) {  // the inverse
        return permute(x.reshape({batch, heads, tokens, head_dim}), {0, 2, 1, 3}).reshape({batch, tokens, dim});
    };
    AttentionBounds packed = attention_bounds(head_major(slice(qkv, 2, 0, dim)), head_major(slice(qkv, 2, dim, 2 * dim)),
                                              head_major(slice(qkv, 2, 2 * dim, 3 * dim)), head_major(wp));
    Tensor dqkv_bound = concat({token_major(packed.dq), token_major(packed.dk), token_major(packed.dv)}, 2);
    check_op([&](const std::vector<Var>& x) { return packed_attention(x[0], Tensor(), heads, 0.0, nullptr); }, {qkv},
             wp, {{"packed_attention output", token_major(packed.output)}, {"packed_attention dqkv", dqkv_bound}});
}

TEST_CASE("bfloat16 mode: infonce's fused sweeps, loss and gradients within the rounding bound") {
    if (!bfloat16_gemm_runs_here()) return;
    // l = q p^T / tau, P = softmax rows, L = mean_i (lse_i - l_ii); G = (P - I) / N,
    // dq = G p / tau, dp = G^T q / tau. With |delta l| <= El, lse_i moves by at most
    // max(log sum_j P_ij e^El_ij, -log sum_j P_ij e^-El_ij), l_ii by El_ii; plus float32's
    // rounding of the logits' exps and shifts, 64 u32 (1 + mean |l|).
    Generator generator(19);
    const int64_t N = 48, d = 16;
    const double tau = 0.1;
    Tensor q = float32_values(generator, {N, d}, 0.25), p = float32_values(generator, {N, d}, 0.25);
    Tensor identity = Tensor::zeros({N, N}, Dtype::Float64);
    for (int64_t i = 0; i < N; ++i) identity.data<double>()[i * N + i] = 1;
    Tensor l = matmul(q, p, Transpose::Second) / tau, P = softmax(l);
    Tensor el = product_bound(q, exact(q), p, exact(p), Transpose::Second) / tau + abs(l) * kUnit32;
    Tensor ep = softmax_bound(P, el);
    Tensor G = (P - identity) / double(N), eg = (ep + (P + identity) * (4 * kUnit32)) / double(N);
    Tensor dq_bound = product_bound(G, eg, p, exact(p), Transpose::None) / tau;
    Tensor dp_bound = product_bound(G, eg, q, exact(q), Transpose::First) / tau;
    Tensor lse_bound = maximum(log(sum(P * exp(el), 1)), -log(sum(P * exp(-el), 1)));
    Tensor loss_bound = mean(lse_bound + sum(el * identity, 1)) + (1 + mean(abs(l)).item()) * (64 * kUnit32);
    for (int64_t block_rows : {int64_t{0}, int64_t{20}}) {  // one block, and blocks that accumulate dp (beta = 1)
        std::string name = block_rows == 0 ? "infonce" : "infonce, blocks of 20 rows,";
        check_op([&](const std::vector<Var>& x) {
                     return losses::infonce(x[0], x[1], Var(), Var(), tau, losses::LogitBlocking{block_rows});
                 },
                 {q, p}, Tensor(), {{name + " loss", loss_bound}, {name + " dq", dq_bound}, {name + " dp", dp_bound}});
    }
}
