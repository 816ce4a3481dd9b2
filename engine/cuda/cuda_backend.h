// The CUDA backend: every kernel of engine/backend.h for tensors on Device::CUDA, GEMM
// through cuBLAS. README.md in this folder explains the design; in short:
//
//   * One class, CudaBackend, compiled twice from the same sources: by nvcc into the real
//     backend (nce_cuda, built when the CUDA toolkit is found), and by the C++ compiler into
//     the host-run backend (nce_cuda_host_run, always built, used by the parity tests).
//   * Three pieces differ between the two, each one small file: the launcher (launch_grid.h
//     vs launch_loop.h), the runtime's memory calls and copies (device_runtime_cuda.cu vs
//     device_runtime_host_run.cpp) and the BLAS handle (blas_cublas.cu vs blas_host_run.cpp).
//   * Each kernel's per-element body is written once, in a *_kernels.h header, as a struct
//     with an NCE_HOST_DEVICE call operator (host_device.h).
//
// ADDING A KERNEL:
//   1. Write its body in a *_kernels.h header (e.g. softmax_kernels.h): a struct holding
//      raw pointers and sizes by value, `NCE_HOST_DEVICE void operator()(int64_t i) const`
//      doing the work of element i and writing only what i owns, or for a row,
//      `operator()(int64_t r, const Warp& warp) const` (warp.h). Math through device_math.h
//      (math::exp, ...), never std::; no exceptions, no allocation in a body; a bad index is
//      recorded (device_errors.h), never thrown.
//   2. Write the member function in a .cu file of this folder (one family per file; new
//      files go in engine/cuda/meson.build's cuda_backend_sources, which both builds use):
//      check shapes and dtypes on the host (NCE_CHECK), take pointers with device_data<T>
//      (device_tensor.h; it refuses a tensor that is not on the CUDA device), and call
//      launch(count, Body{...}) or launch_rows(rows, Body{...}) (launch.h). Use no CUDA API
//      here: only the three pieces do.
//   3. Add its cases to tests/test_cuda_parity.cpp (forward and backward against the CPU
//      backend), and its launches to tests/test_cuda_launch_counts.cpp where a step uses it.
//   Check both builds: `meson test -C build cuda-parity` (host-run) and
//   `ninja -C <a -Dcuda=enabled build> engine/cuda/libnce_cuda.a` (nvcc).
#pragma once
#include <string>

#include "engine/backend.h"
#include "engine/error.h"

namespace nce::cuda {

class CudaBackend final : public Backend {
public:
    Device device() const override { return Device::CUDA; }
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

// check_rows_nonzero's messages wait on the host until the next read-back looks at the
// kernels' error record (device_errors.h): this keeps one and returns its number.
int64_t remember_row_check(const std::string& message);

// Registers the CUDA backend for Device::CUDA when a device can be used, and returns true;
// otherwise marks Device::CUDA unavailable with the reason (backend_for's error then says
// it) and returns false. The host-run build always registers. Call it once at start-up.
bool install_backend();

// "cuda" or "host-run": which build of this backend the program links.
const char* backend_build_kind();

}  // namespace nce::cuda
