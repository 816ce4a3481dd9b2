// Kernels not yet written for CUDA: each throws a clear error rather than compute anything.
// Part of the backend still to come; see "ADDING A KERNEL" in cuda_backend.h.
#include "engine/cuda/cuda_backend.h"

namespace nce::cuda {
namespace {

[[noreturn]] void not_yet(const char* kernel) {
    fail("{}: not yet implemented on CUDA (the kernel is still to be written); run on the cpu device", kernel);
}

}  // namespace

void CudaBackend::index_select_rows(const Tensor&, const Tensor&, Tensor&) { not_yet("index_select"); }
void CudaBackend::index_add_rows(const Tensor&, const Tensor&, Tensor&) { not_yet("index_add"); }
void CudaBackend::gather_last_axis(const Tensor&, const Tensor&, Tensor&) { not_yet("gather"); }
void CudaBackend::scatter_add_last_axis(const Tensor&, const Tensor&, Tensor&) { not_yet("scatter_add"); }
void CudaBackend::keep_where(const Tensor&, const Tensor&, double, Tensor&) { not_yet("keep_where"); }
void CudaBackend::softmax_last_axis(const Tensor&, Tensor&, bool) { not_yet("softmax"); }
void CudaBackend::softmax_last_axis_backward(const Tensor&, const Tensor&, Tensor&, bool) {
    not_yet("softmax backward");
}
void CudaBackend::layer_norm(const Tensor&, const Tensor&, const Tensor&, double, Tensor&, Tensor&, Tensor&) {
    not_yet("layer_norm");
}
void CudaBackend::layer_norm_backward(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                                      Tensor&, Tensor&, Tensor&) {
    not_yet("layer_norm backward");
}
void CudaBackend::random(Distribution, uint64_t, uint64_t, double, double, Tensor&) { not_yet("random"); }
void CudaBackend::dropout(const Tensor&, uint64_t, uint64_t, double, Tensor&) { not_yet("dropout"); }
void CudaBackend::relu_dropout(const Tensor&, uint64_t, uint64_t, double, Tensor&) { not_yet("relu_dropout"); }
void CudaBackend::relu_dropout_backward(const Tensor&, const Tensor&, double, Tensor&) {
    not_yet("relu_dropout backward");
}
void CudaBackend::packed_attention(const Tensor&, const Tensor&, const PackedAttention&, Tensor&, Tensor&) {
    not_yet("packed_attention");
}
void CudaBackend::packed_attention_backward(const Tensor&, const Tensor&, const Tensor&, const PackedAttention&,
                                            Tensor&) {
    not_yet("packed_attention backward");
}

}  // namespace nce::cuda
