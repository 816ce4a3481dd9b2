// Math on tensors, with no gradients: the building blocks of every op's forward and
// backward. Each function allocates its result and calls the backend of the inputs' device.
#pragma once
#include <utility>
#include <vector>

#include "engine/backend.h"
#include "engine/tensor.h"

namespace nce {

// Which operand of a matmul is transposed (on its last two axes).
enum class Transpose { None, First, Second, Both };

// a [m,k] · b [k,n] -> [m,n]; either may be 3-D [batch, ., .]; a 2-D side is shared by the
// batch. Transpose::First uses a^T, Second b^T.
Tensor matmul(const Tensor& a, const Tensor& b, Transpose transpose = Transpose::None);
// out = alpha · op(a)·op(b) + beta · out, into an existing tensor.
void matmul_into(const Tensor& a, const Tensor& b, Transpose transpose, Tensor& out, double alpha = 1.0,
                 double beta = 0.0);

Tensor unary(UnaryOp op, const Tensor& x);
Tensor neg(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor relu(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor square(const Tensor& x);
Tensor step(const Tensor& x);  // 1 where x > 0 else 0

// Broadcasting binary ops (NumPy rules); both operands must share a float dtype.
Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b);
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, const Tensor& b);
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor greater(const Tensor& a, const Tensor& b);  // 1 where a > b else 0

Tensor binary_scalar(BinaryOp op, const Tensor& x, double s);
Tensor add(const Tensor& x, double s);
Tensor mul(const Tensor& x, double s);
Tensor pow(const Tensor& x, double exponent);

Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& x);
Tensor operator+(const Tensor& x, double s);
Tensor operator-(const Tensor& x, double s);
Tensor operator*(const Tensor& x, double s);
Tensor operator/(const Tensor& x, double s);
Tensor operator+(double s, const Tensor& x);
Tensor operator-(double s, const Tensor& x);
Tensor operator*(double s, const Tensor& x);

// In place, same shape: a += b.
void add_inplace(Tensor& a, const Tensor& b);

// Reductions. keepdim keeps the reduced axis with size 1.
Tensor sum(const Tensor& x, int64_t axis, bool keepdim = false);
Tensor sum(const Tensor& x);  // all elements -> shape []
Tensor mean(const Tensor& x, int64_t axis, bool keepdim = false);
Tensor mean(const Tensor& x);
struct MaxResult {
    Tensor values;   // the maxima
    Tensor indices;  // int64 argmax along the axis (first on ties)
};
MaxResult max(const Tensor& x, int64_t axis, bool keepdim = false);
Tensor max(const Tensor& x);  // all elements -> shape []
// Sums x down to `shape` (the reverse of broadcasting `shape` up to x's shape).
Tensor sum_to(const Tensor& x, const Shape& shape);

// Layout.
Tensor permute(const Tensor& x, const std::vector<int64_t>& axes);
Tensor transpose(const Tensor& x, int64_t axis_a, int64_t axis_b);
Tensor slice(const Tensor& x, int64_t axis, int64_t start, int64_t end);
Tensor concat(const std::vector<Tensor>& parts, int64_t axis);
// row [D] -> [count, D], every row a copy of `row`.
Tensor repeat_rows(const Tensor& row, int64_t count);
Tensor stack(const std::vector<Tensor>& parts, int64_t axis);
// table [V, ...] and int64 indices [n] -> [n, ...].
Tensor index_select(const Tensor& table, const Tensor& indices);

// Softmax / log-softmax over the last axis.
Tensor softmax(const Tensor& x);
Tensor log_softmax(const Tensor& x);
// Their backward, from the forward's output y and the gradient dy (both the shape of x):
// softmax: dx = y ⊙ (dy - <dy, y>);  log_softmax (y = log-probabilities): dx = dy - exp(y) · sum(dy).
Tensor softmax_backward(const Tensor& y, const Tensor& dy);
Tensor log_softmax_backward(const Tensor& y, const Tensor& dy);
// Softmax cross-entropy of row r of logits [R, C] against column target_start + r, in place
// (Backend::cross_entropy_rows): returns row_loss [R] = lse_r - logits_r,t and overwrites the
// logits with scale · (softmax - one-hot), the gradient of scale · sum(row_loss).
Tensor cross_entropy_rows_inplace(Tensor& logits, int64_t target_start, double scale);
// Attention over packed qkv [B, T, 3D] (Backend::packed_attention): out [B, T, D] and the
// probabilities [B, H, T, T]; then dqkv [B, T, 3D] from dout.
std::pair<Tensor, Tensor> packed_attention(const Tensor& qkv, const Tensor& key_mask, const PackedAttention& attention);
Tensor packed_attention_backward(const Tensor& qkv, const Tensor& probabilities, const Tensor& dout,
                                 const PackedAttention& attention);

// Keeps x where `keep` is nonzero and puts `fill` everywhere else: where(keep != 0, x, fill).
// (PyTorch's x.masked_fill(mask, fill) fills where its mask is true: the opposite sense,
// hence the name.) `keep` has x's dtype and broadcasts to x.
Tensor keep_where(const Tensor& x, const Tensor& keep, double fill);

Tensor zeros_like(const Tensor& x);
Tensor full_like(const Tensor& x, double value);

// Comparisons for tests and checks.
// all_finite: a loop on the CPU; on another device a reduction there, one number copied back.
bool all_finite(const Tensor& x);
double max_abs(const Tensor& x);
double max_abs_difference(const Tensor& a, const Tensor& b);
// |a - b| <= atol + rtol·|b| everywhere, and the shapes are equal.
bool allclose(const Tensor& a, const Tensor& b, double rtol = 1e-12, double atol = 1e-12);

// Throws naming `op` and `what` unless x is float32 or float64 (not int64).
void check_floating(const Tensor& x, const char* op, const char* what);

}  // namespace nce
