// How an nce.Var meets NumPy, so that no expression can leave the graph unnoticed.
//
// Without this, NumPy on the left of an operator took the expression out of the graph: for
// `np.ones(3) * v`, ndarray.__mul__ runs first, converts v through __array__ and returns a
// plain ndarray, and v's gradient silently lost that path. Now:
//
//   np.float64(2) * v, ndarray * v, v - ndarray, np.exp(v), (1 / tau) * logits
//       NumPy hands the ufunc to Var.__array_ufunc__, which builds the same nce op the
//       operator would: the NumPy side becomes a constant (a number, or a constant Var).
//   np.sin(v), np.add.reduce(v), np.exp(v, out=...), np.dot(a, v), np.concatenate([v, ...])
//       a ufunc or method nce has no op for, or a NumPy function: computed by NumPy when no
//       Var in it requires grad (there is no path to lose); otherwise one TypeError line
//       naming the function and what to use instead.
//   np.asarray(v)
//       the value, as v.numpy(): an explicit conversion, whose result is plainly an array.
#include <fmt/format.h>

#include <optional>
#include <string>

#include "python/bindings.h"
#include "python/numpy_conversion.h"
#include "python/var_operators.h"

namespace nce::python {
namespace {

// The ufuncs that have an nce op, called plainly (no out=, where=, dtype=); nullopt otherwise.
std::optional<Var> ufunc_as_op(const std::string& name, const py::args& inputs) {
    if (inputs.size() == 2) {
        if (name == "add" || name == "subtract" || name == "multiply" || name == "divide" || name == "power")
            return var_arithmetic(name, inputs[0], inputs[1]);
        if (name == "matmul") return matmul(var_from_python(inputs[0]), var_from_python(inputs[1]));
        return std::nullopt;
    }
    if (inputs.size() != 1 || !py::isinstance<Var>(inputs[0])) return std::nullopt;
    Var x = inputs[0].cast<Var>();
    if (name == "negative") return -x;
    if (name == "positive") return x;
    if (name == "exp") return exp(x);
    if (name == "log") return log(x);
    if (name == "sqrt") return sqrt(x);
    if (name == "tanh") return tanh(x);
    return std::nullopt;
}

// Calls f on every Var found in `object` (lists and tuples searched, as NumPy's arguments nest).
template <typename F>
void each_var(py::handle object, F&& f) {
    if (py::isinstance<Var>(object)) {
        f(object.cast<const Var&>());
    } else if (py::isinstance<py::list>(object) || py::isinstance<py::tuple>(object)) {
        for (py::handle item : object) each_var(item, f);
    } else if (py::isinstance<py::dict>(object)) {
        for (auto item : object.cast<py::dict>()) each_var(item.second, f);
    }
}

bool any_requires_grad(std::initializer_list<py::handle> objects) {
    bool found = false;
    for (py::handle object : objects) each_var(object, [&](const Var& v) { found = found || v.requires_grad(); });
    return found;
}

// `object` with every Var replaced by its value as a NumPy array (lists and tuples rebuilt).
py::object without_vars(py::handle object) {
    if (py::isinstance<Var>(object)) return tensor_to_numpy(object.cast<const Var&>().value());
    if (py::isinstance<py::list>(object) || py::isinstance<py::tuple>(object)) {
        py::list items;
        for (py::handle item : object) items.append(without_vars(item));
        return py::isinstance<py::tuple>(object) ? py::object(py::tuple(items)) : py::object(items);
    }
    if (py::isinstance<py::dict>(object)) {
        py::dict items;
        for (auto item : object.cast<py::dict>()) items[item.first] = without_vars(item.second);
        return items;
    }
    return py::reinterpret_borrow<py::object>(object);
}

[[noreturn]] void refuse(const std::string& what) {
    throw py::type_error(fmt::format(
        "nce.Var: {} would compute outside the graph and lose the gradient of a Var that requires grad; "
        "use nce's ops (v * w, nce.exp, nce.log, nce.sum, nce.matmul, ...), or v.numpy() for the value alone",
        what));
}

}  // namespace

void bind_var_numpy_protocol(py::class_<Var>& var_class) {
    var_class.def("__array_ufunc__", [](const Var&, py::object ufunc, const std::string& method, py::args inputs,
                                        py::kwargs kwargs) -> py::object {
        std::string name = ufunc.attr("__name__").cast<std::string>();
        if (method == "__call__" && kwargs.empty())
            if (std::optional<Var> result = ufunc_as_op(name, inputs)) return py::cast(*result);
        if (any_requires_grad({inputs, kwargs}))
            refuse(method == "__call__" ? fmt::format("numpy.{}", name) : fmt::format("numpy.{}.{}", name, method));
        return ufunc.attr(method.c_str())(*without_vars(inputs), **without_vars(kwargs));
    });
    var_class.def("__array_function__", [](const Var&, py::object function, py::handle, py::tuple args,
                                           py::dict kwargs) -> py::object {
        if (any_requires_grad({args, kwargs}))
            refuse(fmt::format("numpy.{}", function.attr("__name__").cast<std::string>()));
        return function(*without_vars(args), **without_vars(kwargs));
    });
    var_class.def("__array__", [](const Var& v, py::object dtype, py::object copy) {
        py::object array = tensor_to_numpy(v.value());
        if (!dtype.is_none()) return array.attr("astype")(dtype);
        return !copy.is_none() && copy.cast<bool>() ? array.attr("copy")() : array;
    }, py::arg("dtype") = py::none(), py::kw_only(), py::arg("copy") = py::none());
}

}  // namespace nce::python
