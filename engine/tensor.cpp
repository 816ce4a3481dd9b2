#include "engine/tensor.h"

#include <cstring>

#include "engine/backend.h"

namespace nce {

Storage::Storage(std::size_t bytes_, Device device_) : bytes(bytes_), device(device_) {
    data = backend_for(device).allocate(bytes);
}

Storage::~Storage() { backend_for(device).release(data, bytes); }

Tensor Tensor::empty(const Shape& shape, Dtype dtype, Device device) {
    for (int64_t s : shape) NCE_CHECK(s >= 0, "tensor: negative size in shape {}", shape_string(shape));
    // At most 2^62 bytes: the allocator's size classes round up without wrapping below that.
    const int64_t most = (int64_t{1} << 62) / static_cast<int64_t>(dtype_size(dtype));
    NCE_CHECK(shape_numel(shape) <= most, "tensor: shape {} of {} needs more than 2^62 bytes", shape_string(shape),
              dtype_name(dtype));
    Tensor t;
    t.shape_ = shape;
    t.dtype_ = dtype;
    t.device_ = device;
    t.storage_ = std::make_shared<Storage>(t.nbytes(), device);
    return t;
}

Tensor Tensor::zeros(const Shape& shape, Dtype dtype, Device device) { return full(shape, 0.0, dtype, device); }

Tensor Tensor::full(const Shape& shape, double value, Dtype dtype, Device device) {
    Tensor t = empty(shape, dtype, device);
    backend_for(device).fill(t, value);
    return t;
}

Tensor Tensor::scalar(double value, Dtype dtype) { return full({}, value, dtype); }

Tensor Tensor::from_vector(const std::vector<double>& values, const Shape& shape, Dtype dtype) {
    NCE_CHECK(static_cast<int64_t>(values.size()) == shape_numel(shape),
              "tensor: {} values do not fill shape {}", values.size(), shape_string(shape));
    Tensor t = empty(shape, dtype);
    for (size_t i = 0; i < values.size(); ++i) {
        switch (dtype) {
            case Dtype::Float32: t.data<float>()[i] = static_cast<float>(values[i]); break;
            case Dtype::Float64: t.data<double>()[i] = values[i]; break;
            case Dtype::Int64: t.data<int64_t>()[i] = static_cast<int64_t>(values[i]); break;
        }
    }
    return t;
}

Tensor Tensor::from_indices(const std::vector<int64_t>& values, const Shape& shape) {
    NCE_CHECK(static_cast<int64_t>(values.size()) == shape_numel(shape),
              "tensor: {} values do not fill shape {}", values.size(), shape_string(shape));
    Tensor t = empty(shape, Dtype::Int64);
    if (!values.empty()) std::memcpy(t.raw_data(), values.data(), values.size() * sizeof(int64_t));
    return t;
}

int64_t Tensor::size(int64_t axis) const { return shape_[normalize_axis(axis, rank(), "size")]; }

void Tensor::check_access(Dtype requested) const {
    NCE_CHECK(defined(), "tensor: access to an undefined tensor");
    NCE_CHECK(requested == dtype_, "tensor: data requested as {} but the tensor holds {}", dtype_name(requested),
              dtype_name(dtype_));
    NCE_CHECK(device_ == Device::CPU, "tensor: host access to a tensor on {}; copy it with to(Device::CPU)",
              device_name(device_));
}

double Tensor::at(int64_t i) const {
    NCE_CHECK(i >= 0 && i < numel(), "tensor: index {} out of range for shape {}", i, shape_string(shape_));
    switch (dtype_) {
        case Dtype::Float32: return data<float>()[i];
        case Dtype::Float64: return data<double>()[i];
        case Dtype::Int64: return static_cast<double>(data<int64_t>()[i]);
    }
    return 0;
}

double Tensor::item() const {
    NCE_CHECK(numel() == 1, "item: tensor of shape {} has {} elements, not one", shape_string(shape_), numel());
    return to(Device::CPU).at(0);
}

std::vector<double> Tensor::to_vector() const {
    Tensor host = to(Device::CPU);
    std::vector<double> out(static_cast<size_t>(numel()));
    for (int64_t i = 0; i < numel(); ++i) out[i] = host.at(i);
    return out;
}

std::vector<int64_t> Tensor::to_indices() const {
    Tensor host = to(Device::CPU);
    NCE_CHECK(dtype_ == Dtype::Int64, "tensor: indices requested from a {} tensor", dtype_name(dtype_));
    return std::vector<int64_t>(host.data<int64_t>(), host.data<int64_t>() + numel());
}

Tensor Tensor::reshape(const Shape& shape) const {
    Shape resolved = shape;
    int64_t known = 1, inferred = -1;
    for (size_t i = 0; i < resolved.size(); ++i) {
        NCE_CHECK(resolved[i] >= -1, "reshape: size {} in {} is negative; only -1 (infer) is allowed", resolved[i],
                  shape_string(shape));
        if (resolved[i] == -1) {
            NCE_CHECK(inferred < 0, "reshape: more than one -1 in {}", shape_string(shape));
            inferred = static_cast<int64_t>(i);
        } else {
            known *= resolved[i];
        }
    }
    if (inferred >= 0) {
        NCE_CHECK(known > 0 && numel() % known == 0, "reshape: cannot reshape {} into {}", shape_string(shape_),
                  shape_string(shape));
        resolved[inferred] = numel() / known;
    }
    NCE_CHECK(shape_numel(resolved) == numel(), "reshape: cannot reshape {} ({} elements) into {}",
              shape_string(shape_), numel(), shape_string(shape));
    Tensor t = *this;
    t.shape_ = resolved;
    return t;
}

Tensor Tensor::rows(int64_t start, int64_t end) const {
    NCE_CHECK(rank() >= 1, "rows: a scalar has no rows");
    NCE_CHECK(0 <= start && start <= end && end <= shape_[0], "rows: range [{}, {}) is outside the {} rows of {}",
              start, end, shape_[0], shape_string(shape_));
    Tensor view = *this;
    view.shape_[0] = end - start;
    const int64_t row_elements = shape_[0] == 0 ? 0 : numel() / shape_[0];
    view.offset_bytes_ += static_cast<std::size_t>(start * row_elements) * dtype_size(dtype_);
    return view;
}

Tensor Tensor::clone() const {
    Tensor t = empty(shape_, dtype_, device_);
    backend_for(device_).copy(*this, t);
    return t;
}

Tensor Tensor::to(Dtype dtype) const {
    if (dtype == dtype_) return *this;
    Tensor t = empty(shape_, dtype, device_);
    backend_for(device_).copy(*this, t);
    return t;
}

Tensor Tensor::to(Device device) const {
    if (device == device_) return *this;
    Tensor t = empty(shape_, dtype_, device);
    // The non-CPU side does the transfer.
    backend_for(device == Device::CPU ? device_ : device).copy(*this, t);
    return t;
}

void check_rank(const Tensor& tensor, int64_t rank, const char* op, const char* what) {
    NCE_CHECK(tensor.defined(), "{}: {} is missing", op, what);
    NCE_CHECK(tensor.rank() == rank, "{}: {} must have rank {}, got shape {}", op, what, rank,
              shape_string(tensor.shape()));
}

void check_same_dtype(const Tensor& a, const Tensor& b, const char* op) {
    NCE_CHECK(a.dtype() == b.dtype(), "{}: dtypes differ ({} vs {})", op, dtype_name(a.dtype()), dtype_name(b.dtype()));
}

}  // namespace nce
