// Tensor: a contiguous, row-major block of float32, float64 or int64 values with a shape,
// living on a device. Tensors are handles: copying one shares the storage (use clone()
// for a deep copy). Math on tensors lives in tensor_math.h; gradients live in autograd.h.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "engine/dtype.h"
#include "engine/error.h"
#include "engine/shape.h"

namespace nce {

// A buffer from the device's backend allocator; returned to it when the last tensor
// using it goes away.
struct Storage {
    void* data = nullptr;
    std::size_t bytes = 0;
    Device device = Device::CPU;
    Storage(std::size_t bytes, Device device);
    ~Storage();
    Storage(const Storage&) = delete;
    Storage& operator=(const Storage&) = delete;
};

template <typename T>
constexpr Dtype dtype_of();
template <> constexpr Dtype dtype_of<float>() { return Dtype::Float32; }
template <> constexpr Dtype dtype_of<double>() { return Dtype::Float64; }
template <> constexpr Dtype dtype_of<int64_t>() { return Dtype::Int64; }

class Tensor {
public:
    Tensor() = default;  // an undefined tensor (defined() is false)

    // Uninitialised memory (from the caching allocator, so possibly a reused buffer).
    static Tensor empty(const Shape& shape, Dtype dtype, Device device = Device::CPU);
    static Tensor zeros(const Shape& shape, Dtype dtype, Device device = Device::CPU);
    static Tensor full(const Shape& shape, double value, Dtype dtype, Device device = Device::CPU);
    static Tensor scalar(double value, Dtype dtype);  // shape []
    static Tensor from_vector(const std::vector<double>& values, const Shape& shape, Dtype dtype);
    static Tensor from_indices(const std::vector<int64_t>& values, const Shape& shape);

    bool defined() const { return storage_ != nullptr; }
    const Shape& shape() const { return shape_; }
    int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
    int64_t size(int64_t axis) const;  // negative counts from the end
    int64_t numel() const { return shape_numel(shape_); }
    Dtype dtype() const { return dtype_; }
    Device device() const { return device_; }
    std::size_t nbytes() const { return static_cast<std::size_t>(numel()) * dtype_size(dtype_); }

    template <typename T>
    T* data() {
        check_access(dtype_of<T>());
        return static_cast<T*>(raw_data());
    }
    template <typename T>
    const T* data() const {
        check_access(dtype_of<T>());
        return static_cast<const T*>(raw_data());
    }
    void* raw_data() const { return static_cast<char*>(storage_->data) + offset_bytes_; }

    // The single element of a one-element tensor, as double.
    double item() const;
    // Element at flat (row-major) index, as double; for tests and printing.
    double at(int64_t flat_index) const;
    std::vector<double> to_vector() const;
    std::vector<int64_t> to_indices() const;

    // Same storage, new shape (one size may be -1). No copy: storage is always contiguous.
    Tensor reshape(const Shape& shape) const;
    // Rows [start, end) of the leading axis, sharing the storage (no copy: the rows of a
    // row-major tensor are one contiguous block). Writing through the view writes the tensor.
    Tensor rows(int64_t start, int64_t end) const;
    Tensor clone() const;
    Tensor to(Dtype dtype) const;
    Tensor to(Device device) const;

    bool same_storage(const Tensor& other) const { return storage_ == other.storage_; }
    // How many tensors share this storage (0 when undefined): what a backward closure keeps
    // alive shows up here, and the tests use it to check that a closure keeps only what it needs.
    long use_count() const { return storage_.use_count(); }

private:
    void check_access(Dtype requested) const;

    std::shared_ptr<Storage> storage_;
    std::size_t offset_bytes_ = 0;
    Shape shape_;
    Dtype dtype_ = Dtype::Float32;
    Device device_ = Device::CPU;
};

// Throws naming `op` unless the tensor has exactly this rank.
void check_rank(const Tensor& tensor, int64_t rank, const char* op, const char* what);
// Throws naming `op` unless both tensors have the same dtype.
void check_same_dtype(const Tensor& a, const Tensor& b, const char* op);

}  // namespace nce
