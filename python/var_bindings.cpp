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

// What `v.grad_fn` shows of a Node: the op, the node of each input, their shapes.
struct GradFn {
    std::shared_ptr<Node> node;
};

py::object grad_fn_of(const std::shared_ptr<Node>& node) { return node ? py::cast(GradFn{node}) : py::none(); }

std::string inputs_text(const Node& node) {
    std::string text;
    for (size_t i = 0; i < node.input_shapes.size(); ++i)
        text += (i ? ", " : "") + shape_string(node.input_shapes[i]) + " " + dtype_name(node.input_dtypes[i]);
    return text;
}

void bind_grad_fn(py::module_& module) {
    py::class_<GradFn>(module, "GradFn",
                       "A node of the graph: the op that made a Var, and the nodes of its inputs (next_functions)")
        .def_property_readonly("name", [](const GradFn& f) { return f.node->op; })
        .def_property_readonly("next_functions", [](const GradFn& f) {
            py::list next;
            for (const auto& input : f.node->next) next.append(grad_fn_of(input));
            return py::tuple(next);
        }, "For each input: its node (name 'leaf' for a parameter), or None for a constant")
        .def_property_readonly("input_shapes", [](const GradFn& f) {
            py::list shapes;
            for (const Shape& shape : f.node->input_shapes) shapes.append(shape_tuple(shape));
            return shapes;
        }, "The shape of each input, saved to check the gradients the backward returns")
        .def_property_readonly("input_dtypes", [](const GradFn& f) {
            std::vector<std::string> names;
            for (Dtype dtype : f.node->input_dtypes) names.emplace_back(dtype_name(dtype));
            return names;
        })
        .def("__repr__", [](const GradFn& f) {
            return fmt::format("<nce.GradFn {}({})>", f.node->op, inputs_text(*f.node));
        });
}

}  // namespace

void bind_var(py::module_& module) {
    bind_grad_fn(module);
    py::class_<Var> var_class(module, "Var",
                    "A value in a computation graph. requires_grad=True makes a leaf whose .grad accumulates "
                    "the gradient of whatever is back-propagated through it.");
    var_class
        .def(py::init([](const ArrayLike& data_like, bool requires_grad) {
                 py::handle data = data_like.object;
                 if (py::isinstance<Var>(data)) return Var(data.cast<const Var&>().value(), requires_grad);
                 return Var(tensor_from_python(data), requires_grad);
             }),
             py::arg("data"), py::arg("requires_grad") = false)
        .def_property_readonly("value", &Var::value, "The value as an nce.Tensor (shares storage)")
        .def("numpy", [](const Var& v) { return tensor_to_numpy(v.value()); },
             "The value as a read-only NumPy array (no copy)")
        .def("item", [](const Var& v) { return v.value().item(); })
        .def_property_readonly("shape", [](const Var& v) { return shape_tuple(v.shape()); })
        .def_property_readonly("dtype", [](const Var& v) { return std::string(dtype_name(v.dtype())); })
        .def_property_readonly("requires_grad", &Var::requires_grad)
        .def_property_readonly("is_leaf", &Var::is_leaf)
        .def_property_readonly("op", [](const Var& v) -> py::object {
            if (!v.requires_grad()) return py::none();
            return py::str(v.is_leaf() ? std::string("leaf") : v.node()->op);
        }, "The name of the op that made this Var ('leaf' for a leaf, None for a constant)")
        .def_property_readonly("grad", [](const Var& v) {
            if (v.requires_grad() && !v.retains_grad())
                fail("Var.grad: this Var is the output of '{}', not a leaf, and keeps no gradient; call "
                     "v.retain_grad() before backward() to keep it", v.node()->op);
            return tensor_to_numpy(v.grad());
        }, "The accumulated gradient as a read-only NumPy array: of a leaf, or of an op's output after "
           "retain_grad(); None before a backward reached it and for a constant")
        .def("retain_grad", &Var::retain_grad,
             "Keeps (accumulates) the gradient reaching this op output in later backward passes, as a leaf does")
        .def_property_readonly("retains_grad", &Var::retains_grad)
        .def("register_hook", [](const Var& v, py::function hook) {
            // The hook holds a Python callable: it is released with the GIL held.
            std::shared_ptr<py::function> held(new py::function(std::move(hook)), [](py::function* f) {
                py::gil_scoped_acquire gil;
                delete f;
            });
            v.register_hook([held](const Tensor& grad) -> Tensor {
                py::gil_scoped_acquire gil;
                py::object replaced = (*held)(tensor_to_numpy(grad));
                return replaced.is_none() ? Tensor() : tensor_from_python(replaced);
            });
        }, py::arg("hook"),
           "hook(grad) runs on the gradient (a read-only NumPy array) reaching this Var in each later backward; "
           "returning an array replaces it, returning None keeps it")
        .def_property_readonly("grad_fn", [](const Var& v) -> py::object {
            if (!v.requires_grad() || v.is_leaf()) return py::none();
            return py::cast(GradFn{v.node()});
        }, "The node of the op that made this Var (None for a leaf or a constant): its name, inputs and saved shapes")
        .def_property_readonly("grad_tensor", &Var::grad, "The accumulated gradient as an nce.Tensor")
        .def("zero_grad", &Var::zero_grad)
        .def("detach", &Var::detach)
        .def("set_value", [](Var& v, const ArrayLike& data) { v.set_value(data.tensor()); }, py::arg("value"),
             "Replaces a leaf's value (an optimizer step written in Python), keeping its gradient slot")
        .def("backward", [](const Var& v, py::object grad, bool retain_graph) {
                 if (grad.is_none()) v.backward(retain_graph);
                 else v.backward(tensor_from_python(grad), retain_graph);
             },
             py::arg("grad") = py::none(), py::arg("retain_graph") = false,
             "Back-propagates from this Var: gradient 1 for a one-element output, else `grad` of its shape")
        .def("__repr__", [](const Var& v) {
            std::string values = py::repr(tensor_to_numpy(v.value())).cast<std::string>();
            if (!v.requires_grad()) return fmt::format("nce.Var({})", values);
            return fmt::format("nce.Var({}, {})", values, v.is_leaf() ? "requires_grad=True" : "op=" + v.node()->op);
        });
    bind_var_operators(var_class);
    bind_var_numpy_protocol(var_class);
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
        .def("uniform", [](Generator& g, const Shape& shape, const DtypeLike& dtype_like, double low, double high) {
                 py::handle dtype = dtype_like.object;
                 return g.uniform(shape, dtype_from_python(dtype), low, high);
             }, py::arg("shape"), py::arg("dtype") = "float64", py::arg("low") = 0.0, py::arg("high") = 1.0)
        .def("normal", [](Generator& g, const Shape& shape, const DtypeLike& dtype_like, double mean, double std) {
                 py::handle dtype = dtype_like.object;
                 return g.normal(shape, dtype_from_python(dtype), mean, std);
             }, py::arg("shape"), py::arg("dtype") = "float64", py::arg("mean") = 0.0, py::arg("std") = 1.0);
    module.def("num_threads", &num_threads, "The engine's thread count (NCE_NUM_THREADS)");
    module.def("set_num_threads", &set_num_threads, py::arg("threads"));
}

}  // namespace nce::python
