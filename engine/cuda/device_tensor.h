// Pointers into a CUDA tensor's memory, and dispatch on its dtype, for the backend's host code.
#pragma once
#include "engine/error.h"
#include "engine/tensor.h"

namespace nce::cuda {

// The device pointer of a tensor on Device::CUDA holding T. Refuses a tensor on another
// device: in the host-run build a CPU tensor's pointer would work by accident, on the GPU
// it would not, so the host-run catches an op that hands the backend the wrong device.
template <typename T>
T* device_data(const Tensor& tensor, const char* op) {
    NCE_CHECK(tensor.defined(), "{}: a tensor is missing", op);
    NCE_CHECK(tensor.device() == Device::CUDA, "{}: a tensor is on {}, not cuda; move it with to(Device::CUDA)", op,
              device_name(tensor.device()));
    NCE_CHECK(tensor.dtype() == dtype_of<T>(), "{}: a tensor holds {} where {} is needed", op,
              dtype_name(tensor.dtype()), dtype_name(dtype_of<T>()));
    return static_cast<T*>(tensor.raw_data());
}

// Calls f(T{}) with T = float or double for the dtype; throws naming `op` for int64.
template <typename F>
void dispatch_floating(Dtype dtype, const char* op, F&& f) {
    switch (dtype) {
        case Dtype::Float32: f(float{}); break;
        case Dtype::Float64: f(double{}); break;
        default: fail("{}: needs a float32 or float64 tensor, got {}", op, dtype_name(dtype));
    }
}

// Calls f(T{}) with T = float, double or int64_t for the dtype.
template <typename F>
void dispatch_any(Dtype dtype, F&& f) {
    switch (dtype) {
        case Dtype::Float32: f(float{}); break;
        case Dtype::Float64: f(double{}); break;
        case Dtype::Int64: f(int64_t{}); break;
    }
}

}  // namespace nce::cuda
