// The CPU backend: Eigen for vectorised loops, OpenBLAS for GEMM, oneTBB for threads.
// Its kernels are split by family over the files of this folder.
#pragma once
#include "engine/backend.h"
#include "engine/error.h"
#include "engine/threads.h"

namespace nce::cpu {

class CpuBackend final : public Backend {
public:
    Device device() const override { return Device::CPU; }
    void* allocate(std::size_t bytes) override;
    void release(void* pointer, std::size_t bytes) override;
    AllocatorStats memory_stats() const override;
    void copy(const Tensor& src, Tensor& dst) override;
    void fill(Tensor& out, double value) override;
    void unary(UnaryOp op, const Tensor& x, Tensor& out) override;
    void binary(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out) override;
    void binary_scalar(BinaryOp op, const Tensor& x, double s, Tensor& out) override;
    void reduce(ReduceOp op, const Tensor& x, int64_t axis, Tensor& out, Tensor* indices) override;
    void sum_to(const Tensor& x, Tensor& out) override;
    void gemm(const Tensor& a, bool transpose_a, const Tensor& b, bool transpose_b, Tensor& out, double alpha,
              double beta) override;
    void permute(const Tensor& x, const std::vector<int64_t>& axes, Tensor& out) override;
    void copy_along_axis(const Tensor& src, int64_t src_start, Tensor& dst, int64_t dst_start, int64_t axis,
                         int64_t length, bool accumulate) override;
    void index_select_rows(const Tensor& table, const Tensor& indices, Tensor& out) override;
    void index_add_rows(const Tensor& src, const Tensor& indices, Tensor& table) override;
    void gather_last_axis(const Tensor& x, const Tensor& targets, Tensor& out) override;
    void scatter_add_last_axis(const Tensor& values, const Tensor& targets, Tensor& dx) override;
    void keep_where(const Tensor& x, const Tensor& keep, double fill, Tensor& out) override;
    void check_rows_nonzero(const Tensor& x, const std::string& message) override;
    void softmax_last_axis(const Tensor& x, Tensor& out, bool log) override;
    void softmax_last_axis_backward(const Tensor& y, const Tensor& dy, Tensor& dx, bool log) override;
    void cross_entropy_rows(Tensor& logits, int64_t target_start, double scale, Tensor& row_loss) override;
    void layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps, Tensor& y, Tensor& mean,
                    Tensor& rstd) override;
    void layer_norm_backward(const Tensor& x, const Tensor& weight, const Tensor& mean, const Tensor& rstd,
                             const Tensor& dy, Tensor& dx, Tensor& dweight, Tensor& dbias) override;
    void adam_step(const AdamStep& step, const Tensor& parameter, const Tensor& grad, const Tensor& exp_avg,
                   const Tensor& exp_avg_sq, const Tensor& max_exp_avg_sq, Tensor& parameter_out, Tensor& exp_avg_out,
                   Tensor& exp_avg_sq_out, Tensor& max_exp_avg_sq_out) override;
    void random(Distribution distribution, uint64_t seed, uint64_t offset, double a, double b, Tensor& out) override;
    void dropout(const Tensor& x, uint64_t seed, uint64_t offset, double keep, Tensor& out) override;
    void relu_dropout(const Tensor& x, uint64_t seed, uint64_t offset, double keep, Tensor& out) override;
    void relu_dropout_backward(const Tensor& y, const Tensor& dy, double keep, Tensor& dx) override;
    void packed_attention(const Tensor& qkv, const Tensor& key_mask, const PackedAttention& attention,
                          Tensor& probabilities, Tensor& out) override;
    void packed_attention_backward(const Tensor& qkv, const Tensor& probabilities, const Tensor& dout,
                                   const PackedAttention& attention, Tensor& dqkv) override;
};

// Calls f(T{}) with T = float or double for the tensor's dtype; throws naming `op` for int64.
template <typename F>
void dispatch_floating(Dtype dtype, const char* op, F&& f) {
    switch (dtype) {
        case Dtype::Float32: f(float{}); break;
        case Dtype::Float64: f(double{}); break;
        default: fail("{}: needs a float32 or float64 tensor, got {}", op, dtype_name(dtype));
    }
}

// Rows of this many elements or more are worth a task of their own.
constexpr int64_t kGrainElements = 16384;

// Grain in rows for row-wise loops over rows of `row_length` elements.
inline int64_t row_grain(int64_t row_length) { return std::max<int64_t>(1, kGrainElements / std::max<int64_t>(1, row_length)); }

}  // namespace nce::cpu
