// Differentiable ops on Vars. Each lives in engine/ops/<name>.cpp with its forward, the
// derivation of its gradient in a comment, and its hand-written backward, side by side.
#pragma once
#include <vector>

#include "engine/autograd.h"
#include "engine/random.h"
#include "engine/tensor_math.h"

namespace nce {

// ---- matmul.cpp ----
// a [m,k] · b [k,n], or batched [batch,m,k] (a 2-D side is shared by the batch).
Var matmul(const Var& a, const Var& b, Transpose transpose = Transpose::None);

// ---- to_device.cpp ----
// x on `device` (x itself when it is there already); the gradient goes back to x's device.
Var to(const Var& x, Device device);

// ---- packed_attention.cpp ----
// Multi-head self-attention on packed projections qkv [B, T, 3D] -> [B, T, D] (the heads
// side by side, before the output projection), with dropout p on the probabilities when
// p > 0 (then a generator is needed). key_padding_mask [B, T]: nonzero = real token.
Var packed_attention(const Var& qkv, const Tensor& key_padding_mask, int64_t heads, double dropout,
                     Generator* generator);

// ---- affine.cpp ----
// x [N, in] · weight [out, in]^T + bias [out] -> [N, out]: a linear layer's rows.
Var affine(const Var& x, const Var& weight, const Var& bias);

// ---- elementwise.cpp: broadcasting arithmetic; gradients are summed over broadcast axes ----
Var add(const Var& a, const Var& b);
Var sub(const Var& a, const Var& b);
Var mul(const Var& a, const Var& b);
Var div(const Var& a, const Var& b);
Var neg(const Var& x);
Var add_scalar(const Var& x, double s);
Var mul_scalar(const Var& x, double s);
Var operator+(const Var& a, const Var& b);
Var operator-(const Var& a, const Var& b);
Var operator*(const Var& a, const Var& b);
Var operator/(const Var& a, const Var& b);
Var operator-(const Var& x);
Var operator+(const Var& x, double s);
Var operator-(const Var& x, double s);
Var operator*(const Var& x, double s);
Var operator/(const Var& x, double s);
Var operator+(double s, const Var& x);
Var operator-(double s, const Var& x);
Var operator*(double s, const Var& x);

// ---- unary.cpp ----
Var exp(const Var& x);
Var log(const Var& x);
Var sqrt(const Var& x);
Var tanh(const Var& x);
Var sigmoid(const Var& x);
Var relu(const Var& x);
Var pow(const Var& x, double exponent);
// base^exponent elementwise with broadcasting; the exponent's gradient needs base > 0.
Var pow(const Var& base, const Var& exponent);
enum class GeluApproximation { Erf, Tanh };
Var gelu(const Var& x, GeluApproximation approximation = GeluApproximation::Erf);

// ---- reduce.cpp ----
Var sum(const Var& x, int64_t axis, bool keepdim = false);
Var sum(const Var& x);
Var mean(const Var& x, int64_t axis, bool keepdim = false);
Var mean(const Var& x);
// Max along an axis; the gradient goes to the first maximum.
Var max(const Var& x, int64_t axis, bool keepdim = false);
Var max(const Var& x);

// ---- shape.cpp ----
Var reshape(const Var& x, const Shape& shape);
Var permute(const Var& x, const std::vector<int64_t>& axes);
Var transpose(const Var& x, int64_t axis_a, int64_t axis_b);
Var slice(const Var& x, int64_t axis, int64_t start, int64_t end);
Var concat(const std::vector<Var>& parts, int64_t axis);
Var stack(const std::vector<Var>& parts, int64_t axis);

// ---- index_select.cpp ----
// Embedding lookup: table [V, ...], int64 indices [n...] -> [n..., ...]; the backward
// scatter-adds into the table's rows.
Var index_select(const Var& table, const Tensor& indices);

// ---- index_add.cpp ----
// Its adjoint: source [N, W...] rows added into a zero [rows, W...] at int64 indices [N];
// the backward is index_select of the gradient.
Var index_add(const Var& source, const Tensor& indices, int64_t rows);

// ---- softmax.cpp (over the last axis) ----
Var softmax(const Var& x);
Var log_softmax(const Var& x);

// ---- cross_entropy.cpp ----
// Mean over rows of -log softmax(logits)[target]: logits [N, C], targets int64 [N].
Var cross_entropy(const Var& logits, const Tensor& targets);

// ---- layer_norm.cpp ----
// Over the last axis of x [..., D]; weight, bias [D]; biased variance, as PyTorch.
Var layer_norm(const Var& x, const Var& weight, const Var& bias, double eps = 1e-5);

// ---- dropout.cpp ----
// Zeroes each element with probability p and scales the rest by 1/(1-p); the mask comes
// from `generator`. Identity when not training or p = 0.
Var dropout(const Var& x, double p, Generator& generator, bool training);
// dropout(relu(x)) in one op: the same values and the same draws as the two ops, one pass
// each way. relu(x) when not training or p = 0.
Var relu_dropout(const Var& x, double p, Generator& generator, bool training);

// ---- masked_mean_pool.cpp ----
// x [B, T, D], mask [B, T] (nonzero = token, 0 = padding; any dtype) -> [B, D]: the mean
// over each row's valid tokens. A row with no valid token is an error.
Var masked_mean_pool(const Var& x, const Tensor& mask);

// ---- l2_normalize.cpp ----
// Each row (last axis) divided by max(norm, eps).
Var l2_normalize(const Var& x, double eps = 1e-12);

// ---- attention.cpp ----
// softmax(q k^T / sqrt(dh) with masked keys at -inf) v, per batch entry and head.
// q [B, H, Tq, dh], k and v [B, H, Tk, dh], key_padding_mask [B, Tk] (nonzero = real key,
// 0 = padding; undefined for none) -> [B, H, Tq, dh]. Masked keys get probability exactly
// 0; a batch entry whose keys are all masked is an error.
Var scaled_dot_product_attention(const Var& q, const Var& k, const Var& v, const Tensor& key_padding_mask);

}  // namespace nce
