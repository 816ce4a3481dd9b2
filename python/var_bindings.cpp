// nce.Var (a value and, when it needs one, the node that made it), nce.no_grad() and
// nce.Generator.
//
//   w = nce.Var(np.random.randn(3, 2), requires_grad=True)
//   loss = nce.sum(nce.relu(x @ w))
//   loss.backward()
//   w.grad                 # NumPy view of the accumulated gradient (None before a backward)
//   with nce.no_grad(): y = x @ w      # no graph is recorded
#include <fmt/format.h>

#include <optional>

#include "python/bindings.h"
#include "python/numpy_conversion.h"

namespace nce::python {
namespace {

// `with nce.no_grad():` holds the engine's NoGradGuard from __enter__ to __exit__ (on the
// thread that entered: the engine's switch is per thread, as Python's `with` is).
class NoGradContext {
public:
    void enter() {
        if (guard_) throw py::value_error("nce.no_grad: this context is already entered");
        guard_.emplace();
    }
    void exit() { guard_.reset(); }

private:
    std::optional<NoGradGuard> guard_;
};

py::tuple shape_tuple(const Shape& shape) {
    py::tuple tuple(shape.size());
    for (size_t i = 0; i < shape.size(); ++i) tuple[i] = shape[i];
    return tuple;
}

// A Python number next to a Var: an op with a scalar; anything else: a constant Var.
bool is_number(py::handle object) {
    return py::isinstance<py::float_>(object) || py::isinstance<py::int_>(object);
}

}  // namespace

void bind_var(py::module_& module) {
    py::class_<Var>(module, "Var",
                    "A value in a computation graph. requires_grad=True makes a leaf whose .grad accumulates "
                    "the gradient of whatever is back-propagated through it.")
        .def(py::init([](py::handle data, bool requires_grad) {
                 if (py::isinstance<Var>(data)) return Var(data.cast<const Var&>().value(), requires_grad);
                 return Var(tensor_from_python(data), requires_grad);
             }),
             py::arg("data"), py::arg("requires_grad") = false)
        .def_property_readonly("value", &Var::value, "The value as an nce.Tensor (shares storage)")
        .def("numpy", [](const Var& v) { return tensor_to_numpy(v.value()); },
             "The value as a read-only NumPy array (no copy)")
        .def("__array__", [](const Var& v, py::object dtype) {
                 py::object array = tensor_to_numpy(v.value());
                 return dtype.is_none() ? array : array.attr("astype")(dtype);
             }, py::arg("dtype") = py::none())
        .def("item", [](const Var& v) { return v.value().item(); })
        .def_property_readonly("shape", [](const Var& v) { return shape_tuple(v.shape()); })
        .def_property_readonly("dtype", [](const Var& v) { return std::string(dtype_name(v.dtype())); })
        .def_property_readonly("requires_grad", &Var::requires_grad)
        .def_property_readonly("is_leaf", &Var::is_leaf)
        .def_property_readonly("op", [](const Var& v) -> py::object {
            if (!v.requires_grad()) return py::none();
            return py::str(v.is_leaf() ? std::string("leaf") : v.node()->op);
        }, "The name of the op that made this Var ('leaf' for a leaf, None for a constant)")
        .def_property_readonly("grad", [](const Var& v) { return tensor_to_numpy(v.grad()); },
                               "The accumulated gradient as a read-only NumPy array, or None")
        .def_property_readonly("grad_tensor", &Var::grad, "The accumulated gradient as an nce.Tensor")
        .def("zero_grad", &Var::zero_grad)
        .def("detach", &Var::detach)
        .def("set_value", [](Var& v, py::handle data) { v.set_value(tensor_from_python(data)); }, py::arg("value"),
             "Replaces a leaf's value (an optimizer step written in Python), keeping its gradient slot")
        .def("backward", [](const Var& v, py::object grad, bool retain_graph) {
                 if (grad.is_none()) v.backward(retain_graph);
                 else v.backward(tensor_from_python(grad), retain_graph);
             },
             py::arg("grad") = py::none(), py::arg("retain_graph") = false,
             "Back-propagates from this Var: gradient 1 for a one-element output, else `grad` of its shape")
        .def("__add__", [](const Var& a, py::handle b) { return is_number(b) ? a + b.cast<double>() : a + var_from_python(b); })
        .def("__radd__", [](const Var& a, py::handle b) { return is_number(b) ? b.cast<double>() + a : var_from_python(b) + a; })
        .def("__sub__", [](const Var& a, py::handle b) { return is_number(b) ? a - b.cast<double>() : a - var_from_python(b); })
        .def("__rsub__", [](const Var& a, py::handle b) { return is_number(b) ? b.cast<double>() - a : var_from_python(b) - a; })
        .def("__mul__", [](const Var& a, py::handle b) { return is_number(b) ? a * b.cast<double>() : a * var_from_python(b); })
        .def("__rmul__", [](const Var& a, py::handle b) { return is_number(b) ? b.cast<double>() * a : var_from_python(b) * a; })
        .def("__truediv__", [](const Var& a, py::handle b) { return is_number(b) ? a / b.cast<double>() : a / var_from_python(b); })
        .def("__rtruediv__", [](const Var& a, py::handle b) {
            return is_number(b) ? pow(a, -1.0) * b.cast<double>() : var_from_python(b) / a;
        })
        .def("__neg__", [](const Var& a) { return -a; })
        .def("__matmul__", [](const Var& a, py::handle b) { return matmul(a, var_from_python(b)); })
        .def("__rmatmul__", [](const Var& a, py::handle b) { return matmul(var_from_python(b), a); })
        .def("__repr__", [](const Var& v) {
            std::string values = py::repr(tensor_to_numpy(v.value())).cast<std::string>();
            if (!v.requires_grad()) return fmt::format("nce.Var({})", values);
            return fmt::format("nce.Var({}, {})", values, v.is_leaf() ? "requires_grad=True" : "op=" + v.node()->op);
        });
    py::implicitly_convertible<Tensor, Var>();

    py::class_<NoGradContext>(module, "no_grad", "with nce.no_grad(): ops inside record no graph")
        .def(py::init<>())
        .def("__enter__", [](NoGradContext& context) { context.enter(); return &context; },
             py::return_value_policy::reference)
        .def("__exit__", [](NoGradContext& context, py::args) { context.exit(); return false; });
    module.def("grad_enabled", &grad_enabled, "False inside nce.no_grad()");

    py::class_<Generator>(module, "Generator",
                          "The engine's seeded counter-based random generator (dropout, model initialisation)")
        .def(py::init<uint64_t>(), py::arg("seed"))
        .def_property_readonly("seed", &Generator::seed)
        .def_property("offset", &Generator::offset, &Generator::set_offset)
        .def("uniform", [](Generator& g, const Shape& shape, py::handle dtype, double low, double high) {
                 return g.uniform(shape, dtype_from_python(dtype), low, high);
             }, py::arg("shape"), py::arg("dtype") = "float64", py::arg("low") = 0.0, py::arg("high") = 1.0)
        .def("normal", [](Generator& g, const Shape& shape, py::handle dtype, double mean, double std) {
                 return g.normal(shape, dtype_from_python(dtype), mean, std);
             }, py::arg("shape"), py::arg("dtype") = "float64", py::arg("mean") = 0.0, py::arg("std") = 1.0);
    module.def("num_threads", &num_threads, "The engine's thread count (NCE_NUM_THREADS)");
    module.def("set_num_threads", &set_num_threads, py::arg("threads"));
}

}  // namespace nce::python
