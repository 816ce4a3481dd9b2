// The backend interface: every kernel an op needs, one virtual function each. Ops never
// touch device memory themselves; they call tensor_math.h, which calls the backend of the
// tensors' device. The CPU backend (engine/cpu/) implements it over Eigen, OpenBLAS and
// oneTBB; a CUDA backend implements the same interface, and no caller changes.
//
// Conventions for every kernel: inputs and outputs are contiguous; `out` is allocated by
// the caller with the right shape and dtype; float32 and float64 are supported throughout,
// int64 where a kernel says so.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/allocator.h"
#include "engine/tensor.h"

namespace nce {

enum class UnaryOp {
    Neg, Exp, Log, Sqrt, Tanh, Sigmoid, Relu, Abs, Square, Reciprocal,
    Step,                 // 1 where x > 0, else 0 (the derivative of relu)
    GeluErf,              // x Phi(x)
    GeluTanh,             // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
    GeluErfDerivative,    // d/dx of GeluErf
    GeluTanhDerivative,   // d/dx of GeluTanh
};

enum class BinaryOp { Add, Sub, Mul, Div, Pow, Maximum, Minimum, Greater /* 1 if a > b else 0 */ };

enum class ReduceOp { Sum, Max };

// Multi-head self-attention on packed projections (engine/ops/packed_attention.cpp has the
// math). qkv [B, T, 3D] holds q, k and v side by side; head h is columns h·dh .. (h+1)·dh of
// each part (dh = D / heads).
struct PackedAttention {
    int64_t heads = 1;
    double keep = 1;                  // 1 - the dropout on the probabilities
    uint64_t seed = 0, offset = 0;    // dropout: P [B, H, T, T] is one Bernoulli fill at offset
};

// One Adam / AdamW update's constants (nn/adam_update.h derives them; each is cast to the
// parameter's dtype before use, as the tensor-level rule does).
struct AdamStep {
    bool l2_in_gradient = false;  // Adam: g + weight_decay · p
    bool decoupled = false;       // AdamW: p · shrink
    bool amsgrad = false;
    double weight_decay = 0, shrink = 1, beta1 = 0, one_minus_beta1 = 0, beta2 = 0, one_minus_beta2 = 0,
           sqrt_bias_correction2 = 1, eps = 0, step_size = 0;
};

enum class Distribution { Uniform /* [a, b) */, Normal /* mean a, std b */, Bernoulli /* 1 with probability a */ };

class Backend {
public:
    virtual ~Backend() = default;
    virtual Device device() const = 0;

    virtual void* allocate(std::size_t bytes) = 0;
    virtual void release(void* pointer, std::size_t bytes) = 0;
    // The device memory's caching allocator (engine/allocator.h): bytes in use, the peak.
    virtual AllocatorStats memory_stats() const = 0;

    // dst = src, converting dtype if they differ (any of the three dtypes). One of the two
    // may be on another device when this backend is the non-CPU side.
    virtual void copy(const Tensor& src, Tensor& dst) = 0;
    virtual void fill(Tensor& out, double value) = 0;

    // out[i] = f(x[i]).
    virtual void unary(UnaryOp op, const Tensor& x, Tensor& out) = 0;
    // out = a op b with NumPy broadcasting; out has the broadcast shape.
    virtual void binary(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out) = 0;
    // out = x op s for a scalar s.
    virtual void binary_scalar(BinaryOp op, const Tensor& x, double s, Tensor& out) = 0;

    // x viewed as [outer, n, inner] around `axis`; out is [outer, inner] (any shape with
    // that many elements). For Max, `indices` (int64, same count) receives the argmax, the
    // first one on ties; it may be null. Results do not depend on the thread count.
    virtual void reduce(ReduceOp op, const Tensor& x, int64_t axis, Tensor& out, Tensor* indices) = 0;
    // Sums x down to out's shape, the reverse of broadcasting out's shape up to x's.
    virtual void sum_to(const Tensor& x, Tensor& out) = 0;

    // out = alpha · op(a) · op(b) + beta · out, op = transpose or not. 2-D: [m,k]·[k,n].
    // 3-D: batched [b,m,k]·[b,k,n]; a 2-D side is shared by every batch entry.
    virtual void gemm(const Tensor& a, bool transpose_a, const Tensor& b, bool transpose_b, Tensor& out,
                      double alpha, double beta) = 0;

    // out = x with its axes reordered: out axis i is x axis axes[i].
    virtual void permute(const Tensor& x, const std::vector<int64_t>& axes, Tensor& out) = 0;
    // Along `axis` (all other axes equal in src and dst): dst[.., dst_start + k, ..] = (or +=
    // when accumulate) src[.., src_start + k, ..] for k in [0, length).
    virtual void copy_along_axis(const Tensor& src, int64_t src_start, Tensor& dst, int64_t dst_start, int64_t axis,
                                 int64_t length, bool accumulate) = 0;

    // table [V, D], indices int64 [n] -> out [n, D]: out[i] = table[indices[i]].
    virtual void index_select_rows(const Tensor& table, const Tensor& indices, Tensor& out) = 0;
    // table [V, D] += src [n, D] scattered by rows: table[indices[i]] += src[i].
    virtual void index_add_rows(const Tensor& src, const Tensor& indices, Tensor& table) = 0;
    // x [N, C], targets int64 [N] -> out [N]: out[i] = x[i, targets[i]].
    virtual void gather_last_axis(const Tensor& x, const Tensor& targets, Tensor& out) = 0;
    // dx [N, C] += values [N] at (i, targets[i]).
    virtual void scatter_add_last_axis(const Tensor& values, const Tensor& targets, Tensor& dx) = 0;

    // out = where(keep != 0, x, fill); keep (same dtype as x) broadcasts to x.
    virtual void keep_where(const Tensor& x, const Tensor& keep, double fill, Tensor& out) = 0;

    // Checks that every row of x [R, C] (any dtype) has a nonzero entry, else throws
    // fmt::format(message, r) for the first empty row r (message holds one "{}"). The CPU
    // throws here; a device records the row and throws at its next read-back (no wait here).
    virtual void check_rows_nonzero(const Tensor& x, const std::string& message) = 0;

    // Softmax (or log-softmax) over the last axis, stable (shifted by the row max).
    virtual void softmax_last_axis(const Tensor& x, Tensor& out, bool log) = 0;
    // Given y = softmax (or log-softmax) and dy, dx = y ⊙ (dy - <dy, y>) for softmax,
    // dx = dy - exp(y) · sum(dy) for log-softmax, per row.
    virtual void softmax_last_axis_backward(const Tensor& y, const Tensor& dy, Tensor& dx, bool log) = 0;

    // Softmax cross-entropy of each row of logits [R, C] against one target column, written
    // over the logits (the row step of the InfoNCE family's sweep, losses/infonce_rows.h):
    //   row_loss_r = lse_j logits_rj - logits_r,t      t = target_start + r (0 <= t < C)
    //   logits_rj <- scale · (softmax_j(logits_r) - [j = t])
    // the second being d(scale · sum_r row_loss_r)/d logits. row_loss [R], the logits' dtype.
    virtual void cross_entropy_rows(Tensor& logits, int64_t target_start, double scale, Tensor& row_loss) = 0;

    // Layer normalisation over the last axis of x [R, D] (any leading shape):
    // y = (x - mean) · rstd · weight + bias; mean and rstd [R] are saved for the backward.
    virtual void layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps, Tensor& y,
                            Tensor& mean, Tensor& rstd) = 0;
    virtual void layer_norm_backward(const Tensor& x, const Tensor& weight, const Tensor& mean, const Tensor& rstd,
                                     const Tensor& dy, Tensor& dx, Tensor& dweight, Tensor& dbias) = 0;

    // One Adam step over every element of a parameter in one pass, per element:
    //   g' = g + wd·p (Adam)   p' = p·shrink (AdamW)   m = b1·m + (1-b1)·g'   v = b2·v + (1-b2)·g'²
    //   vmax = max(vmax, v) (amsgrad)   p_out = p' - m / (sqrt(v or vmax) / sqrt(bc2) + eps) · step_size
    // The outputs are new tensors of the parameter's shape; max_exp_avg_sq and its output are
    // undefined without amsgrad.
    virtual void adam_step(const AdamStep& step, const Tensor& parameter, const Tensor& grad, const Tensor& exp_avg,
                           const Tensor& exp_avg_sq, const Tensor& max_exp_avg_sq, Tensor& parameter_out,
                           Tensor& exp_avg_out, Tensor& exp_avg_sq_out, Tensor& max_exp_avg_sq_out) = 0;

    // Counter-based random numbers: element i is a pure function of (seed, offset, i), so
    // the result does not depend on the thread count or the device (see random.h).
    virtual void random(Distribution distribution, uint64_t seed, uint64_t offset, double a, double b,
                        Tensor& out) = 0;
    // Dropout's mask and product in one pass, the mask never stored:
    //   out[i] = x[i] / keep   where element i of a Bernoulli(keep) fill at offset is 1,   else 0
    // with the same draws as random(Bernoulli, seed, offset, keep), so calling it again on the
    // gradient with the same seed and offset applies the same mask.
    virtual void dropout(const Tensor& x, uint64_t seed, uint64_t offset, double keep, Tensor& out) = 0;
    // relu, then the same dropout, in one pass: out[i] = max(x[i], 0) / keep where kept, else 0.
    virtual void relu_dropout(const Tensor& x, uint64_t seed, uint64_t offset, double keep, Tensor& out) = 0;
    // Its backward from its output y: dx[i] = dy[i] / keep where y[i] != 0, else 0.
    virtual void relu_dropout_backward(const Tensor& y, const Tensor& dy, double keep, Tensor& dx) = 0;

    // Attention over packed qkv [B, T, 3D]; key_mask [B, T] in qkv's dtype (nonzero = real
    // key) or undefined for none. Writes out [B, T, D] (the heads side by side) and
    // probabilities [B, H, T, T] (P, before dropout), which the backward reads back.
    virtual void packed_attention(const Tensor& qkv, const Tensor& key_mask, const PackedAttention& attention,
                                  Tensor& probabilities, Tensor& out) = 0;
    // dqkv [B, T, 3D] from dout [B, T, D], given qkv and the forward's probabilities.
    virtual void packed_attention_backward(const Tensor& qkv, const Tensor& probabilities, const Tensor& dout,
                                           const PackedAttention& attention, Tensor& dqkv) = 0;
};

// The backend that serves tensors on `device`; throws if this build has none for it.
Backend& backend_for(Device device);

// Registers a backend at start-up (the CUDA backend calls this when the build has it).
void register_backend(Device device, Backend* backend);
// Says why `device` has no backend (a build with CUDA on a machine without a GPU): the
// one-line error backend_for gives then names this reason instead of the rebuild advice.
void mark_backend_unavailable(Device device, std::string reason);

}  // namespace nce
