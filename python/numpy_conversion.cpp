// NumPy <-> Tensor: a copy in, a read-only view out (numpy_conversion.h).
#include "python/numpy_conversion.h"

#include <cstring>
#include <string>

namespace nce::python {
namespace {

template <typename T>
Tensor copy_into_tensor(const py::array& source, Dtype dtype) {
    auto contiguous = py::array_t<T, py::array::c_style | py::array::forcecast>::ensure(source);
    if (!contiguous) throw py::error_already_set();
    Shape shape(contiguous.shape(), contiguous.shape() + contiguous.ndim());
    Tensor tensor = Tensor::empty(shape, dtype);
    if (tensor.numel() > 0) std::memcpy(tensor.raw_data(), contiguous.data(), tensor.nbytes());
    return tensor;
}

}  // namespace

py::dtype numpy_dtype(Dtype dtype) {
    switch (dtype) {
        case Dtype::Float32: return py::dtype::of<float>();
        case Dtype::Float64: return py::dtype::of<double>();
        case Dtype::Int64: return py::dtype::of<int64_t>();
    }
    return py::dtype::of<double>();
}

Dtype dtype_from_python(py::handle object) {
    if (py::isinstance<py::str>(object)) {
        std::string name = object.cast<std::string>();
        if (name == "int64") return Dtype::Int64;
        return parse_dtype(name);  // float32 / float64, else the engine's one-line error
    }
    py::dtype dtype = py::dtype::from_args(py::reinterpret_borrow<py::object>(object));
    if (dtype.equal(py::dtype::of<float>())) return Dtype::Float32;
    if (dtype.equal(py::dtype::of<double>())) return Dtype::Float64;
    if (dtype.equal(py::dtype::of<int64_t>())) return Dtype::Int64;
    throw py::type_error("nce: dtype " + py::str(object).cast<std::string>() +
                         " is not supported; use float32, float64 or int64");
}

Tensor tensor_from_python(py::handle object) {
    if (py::isinstance<Tensor>(object)) return object.cast<Tensor>();
    if (py::isinstance<Var>(object)) return object.cast<const Var&>().value();
    py::array array = py::array::ensure(object);
    if (!array) throw py::type_error("nce: expected an array-like value, got " +
                                     std::string(py::str(py::type::of(object)).cast<std::string>()));
    // The dtype's kind and size through its Python attributes: pybind11 2.10 reads them from
    // NumPy 1's struct layout, which NumPy 2 changed (its itemsize then reads as another field).
    py::object dtype = array.attr("dtype");
    char kind = dtype.attr("kind").cast<std::string>().at(0);
    auto itemsize = dtype.attr("itemsize").cast<int64_t>();
    if (kind == 'f' && itemsize == 4) return copy_into_tensor<float>(array, Dtype::Float32);
    if (kind == 'f' && itemsize == 8) return copy_into_tensor<double>(array, Dtype::Float64);
    if (kind == 'i' || kind == 'u' || kind == 'b') return copy_into_tensor<int64_t>(array, Dtype::Int64);
    throw py::type_error("nce: NumPy dtype " + py::str(dtype).cast<std::string>() +
                         " is not supported; use float32, float64 or int64 (integers and booleans become int64)");
}

Var var_from_python(py::handle object) {
    if (py::isinstance<Var>(object)) return object.cast<Var>();
    return Var(tensor_from_python(object));
}

py::object tensor_to_numpy(const Tensor& tensor) {
    if (!tensor.defined()) return py::none();
    Tensor host = tensor.device() == Device::CPU ? tensor : tensor.to(Device::CPU);
    std::vector<py::ssize_t> shape(host.shape().begin(), host.shape().end());
    std::vector<py::ssize_t> strides;
    for (int64_t stride : contiguous_strides(host.shape()))
        strides.push_back(static_cast<py::ssize_t>(stride * dtype_size(host.dtype())));
    py::array array;
    if (host.numel() == 0) {
        array = py::array(numpy_dtype(host.dtype()), shape, strides);
    } else {
        // The capsule owns a handle on the storage: the array keeps it alive, and the
        // storage goes back to the allocator when the last of the two lets go.
        auto* owner = new Tensor(host);
        py::capsule base(owner, [](void* pointer) { delete static_cast<Tensor*>(pointer); });
        array = py::array(numpy_dtype(host.dtype()), shape, strides, host.raw_data(), base);
    }
    array.attr("setflags")(py::arg("write") = false);
    return array;
}

}  // namespace nce::python
