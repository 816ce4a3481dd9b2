// Kernels that move values: permute, and copies along an axis (slice, concat, stack).
#include "engine/cuda/cuda_backend.h"
#include "engine/cuda/device_tensor.h"
#include "engine/cuda/launch.h"
#include "engine/cuda/layout_kernels.h"

namespace nce::cuda {
namespace {

// Calls f(Word{}) with the unsigned word of the dtype's size: moves need no arithmetic.
template <typename F>
void dispatch_word(Dtype dtype, F&& f) {
    if (dtype_size(dtype) == 4)
        f(uint32_t{});
    else
        f(uint64_t{});
}

template <typename Word>
Word* words(const Tensor& tensor, const char* op) {
    NCE_CHECK(tensor.device() == Device::CUDA, "{}: a tensor is on {}, not cuda", op, device_name(tensor.device()));
    return static_cast<Word*>(tensor.raw_data());
}

}  // namespace

void CudaBackend::permute(const Tensor& x, const std::vector<int64_t>& axes, Tensor& out) {
    const int rank = static_cast<int>(axes.size());
    NCE_CHECK(rank <= kMaxRank, "permute: rank {} is above the CUDA backend's {}", rank, kMaxRank);
    const std::vector<int64_t> x_strides = contiguous_strides(x.shape());
    dispatch_word(x.dtype(), [&](auto zero) {
        using Word = decltype(zero);
        PermuteBody<Word> body{words<Word>(x, "permute"), words<Word>(out, "permute"), rank, {}, {}};
        for (int axis = 0; axis < rank; ++axis) {
            body.out_sizes[axis] = out.shape()[axis];
            body.source_strides[axis] = x_strides[axes[axis]];
        }
        launch(out.numel(), body);
    });
}

void CudaBackend::copy_along_axis(const Tensor& src, int64_t src_start, Tensor& dst, int64_t dst_start, int64_t axis,
                                  int64_t length, bool accumulate) {
    // Both viewed as [outer, size along axis, inner]; length · inner values move per outer.
    int64_t outer = 1, inner = 1;
    for (int64_t i = 0; i < axis; ++i) outer *= src.shape()[i];
    for (size_t i = axis + 1; i < src.shape().size(); ++i) inner *= src.shape()[i];
    const int64_t src_axis = src.shape()[axis], dst_axis = dst.shape()[axis], block = length * inner;
    if (block == 0) return;
    if (!accumulate) {
        dispatch_word(src.dtype(), [&](auto zero) {
            using Word = decltype(zero);
            launch(outer * block, CopyAlongAxisBody<Word, false>{words<Word>(src, "copy_along_axis"),
                                                                 words<Word>(dst, "copy_along_axis"), block, inner,
                                                                 src_axis, src_start, dst_axis, dst_start});
        });
        return;
    }
    dispatch_floating(src.dtype(), "copy_along_axis", [&](auto zero) {
        using T = decltype(zero);
        launch(outer * block, CopyAlongAxisBody<T, true>{device_data<T>(src, "copy_along_axis"),
                                                         device_data<T>(dst, "copy_along_axis"), block, inner,
                                                         src_axis, src_start, dst_axis, dst_start});
    });
}

}  // namespace nce::cuda
