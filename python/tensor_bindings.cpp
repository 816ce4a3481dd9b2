// nce.Tensor: the engine's tensor, built from any array-like (copied in) and read out as a
// NumPy array without a copy (numpy_conversion.h).
//
//   t = nce.Tensor(np.ones((2, 3), np.float32))
//   t.shape == (2, 3); t.dtype == "float32"
//   a = t.numpy()          # read-only view of t's storage; np.asarray(t) is the same view
#include <fmt/format.h>

#include "python/bindings.h"
#include "python/numpy_conversion.h"

namespace nce::python {
namespace {

py::tuple shape_tuple(const Shape& shape) {
    py::tuple tuple(shape.size());
    for (size_t i = 0; i < shape.size(); ++i) tuple[i] = shape[i];
    return tuple;
}

Shape shape_from_python(py::handle object) {
    if (py::isinstance<py::int_>(object)) return {object.cast<int64_t>()};
    return object.cast<Shape>();
}

}  // namespace

void bind_tensor(py::module_& module) {
    py::class_<Tensor>(module, "Tensor",
                       "A contiguous row-major float32, float64 or int64 tensor of the engine. Built from any "
                       "array-like (copied); .numpy() reads it without a copy.")
        .def(py::init([](const ArrayLike& data_like, py::object dtype) {
                 py::handle data = data_like.object;
                 Tensor tensor = tensor_from_python(data);
                 if (!dtype.is_none()) {
                     Dtype wanted = dtype_from_python(dtype);
                     if (wanted != tensor.dtype()) tensor = tensor.to(wanted);
                 }
                 return tensor;
             }),
             py::arg("data"), py::arg("dtype") = py::none())
        .def_static("zeros", [](const ShapeLike& shape_like, const DtypeLike& dtype_like) {
                        py::handle shape = shape_like.object, dtype = dtype_like.object;
                        return Tensor::zeros(shape_from_python(shape), dtype_from_python(dtype));
                    }, py::arg("shape"), py::arg("dtype") = "float64")
        .def_static("full", [](const ShapeLike& shape_like, double value, const DtypeLike& dtype_like) {
                        py::handle shape = shape_like.object, dtype = dtype_like.object;
                        return Tensor::full(shape_from_python(shape), value, dtype_from_python(dtype));
                    }, py::arg("shape"), py::arg("value"), py::arg("dtype") = "float64")
        .def_property_readonly("shape", [](const Tensor& t) { return shape_tuple(t.shape()); })
        .def_property_readonly("dtype", [](const Tensor& t) { return std::string(dtype_name(t.dtype())); })
        .def_property_readonly("ndim", &Tensor::rank)
        .def_property_readonly("numel", &Tensor::numel)
        .def("numpy", [](const Tensor& t) { return tensor_to_numpy(t); },
             "The values as a read-only NumPy array sharing this tensor's storage (no copy)")
        // NumPy 2 passes copy=: True asks for an array of its own (astype makes one too).
        .def("__array__", [](const Tensor& t, py::object dtype, py::object copy) {
                 py::object array = tensor_to_numpy(t);
                 if (!dtype.is_none()) return array.attr("astype")(dtype);
                 return !copy.is_none() && copy.cast<bool>() ? array.attr("copy")() : array;
             }, py::arg("dtype") = py::none(), py::kw_only(), py::arg("copy") = py::none())
        .def("item", &Tensor::item)
        .def("tolist", [](const Tensor& t) { return tensor_to_numpy(t).attr("tolist")(); })
        .def("to", [](const Tensor& t, const DtypeLike& dtype) { return t.to(dtype.dtype()); }, py::arg("dtype"))
        .def("clone", &Tensor::clone)
        .def("reshape", [](const Tensor& t, const ShapeLike& shape) { return t.reshape(shape_from_python(shape.object)); },
             py::arg("shape"))
        .def("__len__", [](const Tensor& t) {
                 if (t.rank() == 0) throw py::type_error("len() of a 0-d nce.Tensor");
                 return t.size(0);
             })
        .def("__repr__", [](const Tensor& t) {
            std::string values = py::repr(tensor_to_numpy(t)).cast<std::string>();
            return fmt::format("nce.Tensor({}, dtype={})", values, dtype_name(t.dtype()));
        });
    py::implicitly_convertible<py::array, Tensor>();
}

}  // namespace nce::python
