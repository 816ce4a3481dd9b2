// nce.Function: a differentiable op written in Python, in the shape of PyTorch's
// autograd.Function. The forward and backward work on NumPy arrays; apply() records one node
// named after the class, so the op sits in the graph like any engine op: its gradient flows
// into the rest of the graph, nce.gradcheck checks it, and to_dot draws it under its name.
//
//   class Square(nce.Function):
//       @staticmethod
//       def forward(ctx, x):            # x: NumPy array (read-only), the input's value
//           ctx.save_for_backward(x)
//           return x * x
//       @staticmethod
//       def backward(ctx, dy):          # dy: dL/dy, the output's shape
//           (x,) = ctx.saved_tensors
//           return 2 * x * dy           # dL/dx: one gradient per input (None: none)
//
//   y = Square.apply(v)                 # an nce.Var; nce.sum(y).backward() fills v.grad
//
// Inputs that are nce.Var (or nce.Tensor) reach forward as arrays; anything else (a number, a
// string) is passed as it is and gets no gradient (backward returns None in its place).
// forward runs without recording a graph. Every gradient backward returns is checked against
// its input's shape and dtype, and a wrong one is one line naming the class.
#include <fmt/format.h>

#include <memory>
#include <string>
#include <vector>

#include "python/bindings.h"
#include "python/numpy_conversion.h"

namespace nce::python {
namespace {

// The base class users derive from; all of it lives in apply() and the subclass's methods.
struct FunctionBase {};

// ctx: what forward keeps for backward (save_for_backward), and any attribute set on it.
struct FunctionContext {
    py::tuple saved = py::tuple(0);
};

// A Python object kept by a node's backward closure: released with the GIL held, whichever
// thread drops the node.
std::shared_ptr<py::object> held(py::object object) {
    return {new py::object(std::move(object)), [](py::object* o) {
                py::gil_scoped_acquire gil;
                delete o;
            }};
}

std::string class_name(const py::object& cls) { return cls.attr("__name__").cast<std::string>(); }

// The tuple of gradients backward returned, one per forward argument.
std::vector<py::object> gradient_list(const py::object& returned, size_t inputs, const std::string& name) {
    std::vector<py::object> grads;
    if (py::isinstance<py::tuple>(returned) || py::isinstance<py::list>(returned)) {
        for (py::handle g : returned) grads.push_back(py::reinterpret_borrow<py::object>(g));
    } else {
        grads.push_back(returned);
    }
    if (grads.size() != inputs)
        throw py::value_error(fmt::format("{}.backward returned {} gradients; forward took {} inputs, so return one "
                                          "per input (None for an input with no gradient)",
                                          name, grads.size(), inputs));
    return grads;
}

py::object apply(py::object cls, py::args args) {
    std::string name = class_name(cls);
    if (!py::hasattr(cls, "forward") || !py::hasattr(cls, "backward"))
        throw py::type_error(fmt::format("{}: an nce.Function needs static methods forward(ctx, ...) and "
                                         "backward(ctx, grad)", name));
    std::vector<Var> inputs;                 // the Var arguments, in order
    std::vector<size_t> input_positions;     // where each sits among the arguments
    py::list forward_args;
    for (size_t i = 0; i < args.size(); ++i) {
        if (py::isinstance<Var>(args[i]) || py::isinstance<Tensor>(args[i])) {
            Var v = var_from_python(args[i]);
            inputs.push_back(v);
            input_positions.push_back(i);
            forward_args.append(tensor_to_numpy(v.value()));
        } else {
            forward_args.append(args[i]);
        }
    }
    if (inputs.empty())
        throw py::type_error(fmt::format("{}.apply: no argument is an nce.Var, so there is nothing to differentiate",
                                         name));

    py::object ctx = py::cast(FunctionContext{});
    Tensor value;
    {
        NoGradGuard no_graph;
        py::object out = cls.attr("forward")(ctx, *forward_args);
        value = tensor_from_python(out);
    }
    if (!is_floating(value.dtype()))
        throw py::type_error(fmt::format("{}.forward returned {} values; return a float32 or float64 array", name,
                                         dtype_name(value.dtype())));

    auto keep_cls = held(cls), keep_ctx = held(ctx);
    size_t argument_count = args.size();
    BackwardFn backward = [keep_cls, keep_ctx, input_positions, argument_count, name](const Tensor& dy) -> Grads {
        py::gil_scoped_acquire gil;
        py::object returned = keep_cls->attr("backward")(*keep_ctx, tensor_to_numpy(dy));
        std::vector<py::object> grads = gradient_list(returned, argument_count, name);
        Grads out;
        for (size_t position : input_positions)
            out.push_back(grads[position].is_none() ? Tensor() : tensor_from_python(grads[position]));
        return out;
    };
    return py::cast(Var::from_op(name, value, inputs, std::move(backward)));
}

}  // namespace

void bind_function(py::module_& module) {
    py::class_<FunctionContext>(module, "FunctionContext", py::dynamic_attr(),
                                "ctx of an nce.Function: save_for_backward(*arrays) in forward, saved_tensors in "
                                "backward; any other attribute may be set on it too")
        .def("save_for_backward", [](FunctionContext& ctx, py::args arrays) { ctx.saved = arrays; })
        .def_property_readonly("saved_tensors", [](const FunctionContext& ctx) { return ctx.saved; });

    py::class_<FunctionBase> function(module, "Function",
                                      "Base of a differentiable op written in Python: define static forward(ctx, "
                                      "*inputs) and backward(ctx, grad) on NumPy arrays, call Class.apply(*inputs)");
    function.def(py::init<>());
    py::cpp_function apply_function(&apply, py::name("apply"));
    function.attr("apply") = py::reinterpret_steal<py::object>(PyClassMethod_New(apply_function.ptr()));
}

}  // namespace nce::python
