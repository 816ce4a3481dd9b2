// nce.Var's Python operators and the methods a student types, each built from the engine's
// ops, so its backward is theirs (proved op by op; python/tests/test_var_operators.py checks
// every form here against finite differences):
//
//   v + w, v - w, v * w, v / w   add, sub, mul, div (a number on either side: the scalar op)
//   v ** 2, v ** w, 2 ** v       pow; a number base b > 0 is exp(v · ln b)
//   -v, v @ w                    neg, matmul
//   v.T                          transpose (rank 2), permute with the axes reversed (rank > 2)
//   v[i], v[a:b], v[i, a:b]      slice (and reshape, which drops an integer-indexed axis)
//   v.sum(), v.mean(axis=1)      sum, mean
//   v < w, v >= 0, ...           a constant (requires_grad False) of 1.0 / 0.0 in v's dtype:
//                                a comparison has no gradient, as in PyTorch
#include "python/var_operators.h"

#include <fmt/format.h>

#include <cmath>
#include <string>
#include <vector>

#include "python/bindings.h"

namespace nce::python {

std::optional<double> as_number(py::handle object) {
    if (py::isinstance<py::bool_>(object)) return std::nullopt;
    if (py::isinstance<py::float_>(object) || py::isinstance<py::int_>(object)) return object.cast<double>();
    py::module_ numpy = py::module_::import("numpy");
    bool numpy_scalar = py::isinstance(object, numpy.attr("generic"));
    bool zero_d_array = py::isinstance<py::array>(object) && object.cast<py::array>().ndim() == 0;
    if (numpy_scalar || zero_d_array) {
        char kind = py::dtype::from_args(object.attr("dtype")).kind();
        if (kind == 'f' || kind == 'i' || kind == 'u') return object.attr("__float__")().cast<double>();
    }
    return std::nullopt;
}

namespace {

// b ** v for a number b > 0: b^v = exp(v ln b), so d(b^v)/dv = b^v ln b, exp's own backward
// times the constant ln b.
Var number_to_the(double base, const Var& exponent) {
    if (!(base > 0.0))
        throw py::value_error(fmt::format("nce.Var: {} ** v needs a positive base (b^v = exp(v ln b)); got {}",
                                          base, base));
    return exp(exponent * std::log(base));
}

}  // namespace

Var var_arithmetic(const std::string& op, py::handle a, py::handle b) {
    std::optional<double> number_a = as_number(a), number_b = as_number(b);
    if (op == "power") {
        if (number_b) return pow(var_from_python(a), *number_b);
        if (number_a) return number_to_the(*number_a, var_from_python(b));
        return pow(var_from_python(a), var_from_python(b));
    }
    if (number_a) {
        Var y = var_from_python(b);
        if (op == "add") return *number_a + y;
        if (op == "subtract") return *number_a - y;
        if (op == "multiply") return *number_a * y;
        return pow(y, -1.0) * *number_a;  // divide: s / y = y^-1 · s
    }
    Var x = var_from_python(a);
    if (number_b) {
        if (op == "add") return x + *number_b;
        if (op == "subtract") return x - *number_b;
        if (op == "multiply") return x * *number_b;
        return x / *number_b;
    }
    Var y = var_from_python(b);
    if (op == "add") return x + y;
    if (op == "subtract") return x - y;
    if (op == "multiply") return x * y;
    return x / y;
}

namespace {

bool is_integer(py::handle object) {
    if (py::isinstance<py::bool_>(object)) return false;
    return py::isinstance<py::int_>(object) || py::isinstance(object, py::module_::import("numpy").attr("integer"));
}

// v[key]: integers and step-1 slices, one per leading axis (a tuple for several). An integer
// takes a slice of one and drops that axis (reshape); a slice keeps it.
Var index(const Var& v, py::handle key) {
    std::vector<py::handle> parts;
    if (py::isinstance<py::tuple>(key)) {
        for (py::handle part : key) parts.push_back(part);
    } else {
        parts.push_back(key);
    }
    if (static_cast<int64_t>(parts.size()) > static_cast<int64_t>(v.shape().size()))
        throw py::index_error(fmt::format("nce.Var: {} indices for a Var of rank {}", parts.size(), v.shape().size()));
    Var result = v;
    Shape kept;  // the axes that remain, in order
    int64_t axis = 0;
    for (py::handle part : parts) {
        const int64_t length = result.shape()[axis];
        if (py::isinstance<py::slice>(part)) {
            py::ssize_t start = 0, stop = 0, step = 0, count = 0;
            if (!part.cast<py::slice>().compute(length, &start, &stop, &step, &count)) throw py::error_already_set();
            if (step != 1)
                throw py::index_error("nce.Var: slices with a step (v[::2]) are not differentiable here; "
                                      "use nce.index_select with the indices you want");
            result = slice(result, axis, start, start + count);
            kept.push_back(count);
            ++axis;
        } else if (is_integer(part)) {
            int64_t i = part.cast<int64_t>();
            if (i < -length || i >= length)
                throw py::index_error(fmt::format("nce.Var: index {} is out of range for axis {} of size {}", i,
                                                  kept.size(), length));
            if (i < 0) i += length;
            result = slice(result, axis, i, i + 1);
            ++axis;  // dropped below
        } else {
            throw py::index_error(fmt::format("nce.Var: index with integers and slices (v[i], v[a:b], v[i, a:b]); "
                                              "got {} (for gathers use nce.index_select)",
                                              py::str(py::type::of(part)).cast<std::string>()));
        }
    }
    Shape out = kept;
    for (size_t i = static_cast<size_t>(axis); i < result.shape().size(); ++i) out.push_back(result.shape()[i]);
    return out == result.shape() ? result : reshape(result, out);
}

// v.T: a matrix's transpose; for rank > 2 every axis reversed (NumPy's .T); rank < 2 as it is.
Var transposed(const Var& v) {
    int64_t rank = static_cast<int64_t>(v.shape().size());
    if (rank < 2) return v;
    if (rank == 2) return transpose(v, 0, 1);
    std::vector<int64_t> axes;
    for (int64_t i = rank - 1; i >= 0; --i) axes.push_back(i);
    return permute(v, axes);
}

// v <op> other as a constant of v's dtype, 1.0 where it holds.
Var comparison(const Var& v, py::handle other, const char* numpy_function) {
    py::module_ numpy = py::module_::import("numpy");
    py::object right = py::isinstance<Var>(other) ? tensor_to_numpy(other.cast<const Var&>().value())
                                                  : py::reinterpret_borrow<py::object>(other);
    py::object holds = numpy.attr(numpy_function)(tensor_to_numpy(v.value()), right);
    return Var(tensor_from_python(holds.attr("astype")(numpy_dtype(v.dtype()))));
}

}  // namespace

void bind_var_operators(py::class_<Var>& var_class) {
    using py::arg;
    auto binary = [&](const char* name, const char* op, bool reflected) {
        if (reflected) {
            var_class.def(name, [op](py::object self, const VarLike& other) {
                return var_arithmetic(op, other.object, self);
            });
        } else {
            var_class.def(name, [op](py::object self, const VarLike& other) {
                return var_arithmetic(op, self, other.object);
            });
        }
    };
    binary("__add__", "add", false);
    binary("__radd__", "add", true);
    binary("__sub__", "subtract", false);
    binary("__rsub__", "subtract", true);
    binary("__mul__", "multiply", false);
    binary("__rmul__", "multiply", true);
    binary("__truediv__", "divide", false);
    binary("__rtruediv__", "divide", true);
    binary("__pow__", "power", false);
    binary("__rpow__", "power", true);
    var_class
        .def("__neg__", [](const Var& a) { return -a; })
        .def("__matmul__", [](const Var& a, const VarLike& b) { return matmul(a, b.var()); })
        .def("__rmatmul__", [](const Var& a, const VarLike& b) { return matmul(b.var(), a); })
        .def("__getitem__", [](const Var& v, const IndexKey& key) { return index(v, key.object); },
             "v[i], v[a:b], v[i, a:b]: slice (and reshape) in the graph")
        .def_property_readonly("T", &transposed, "The transpose (rank 2); every axis reversed for rank > 2")
        .def("sum", [](const Var& v, py::object axis, bool keepdim) {
            return axis.is_none() ? sum(v) : sum(v, axis.cast<int64_t>(), keepdim);
        }, arg("axis") = py::none(), arg("keepdim") = false, "nce.sum(v, axis, keepdim)")
        .def("mean", [](const Var& v, py::object axis, bool keepdim) {
            return axis.is_none() ? mean(v) : mean(v, axis.cast<int64_t>(), keepdim);
        }, arg("axis") = py::none(), arg("keepdim") = false, "nce.mean(v, axis, keepdim)")
        .def("__lt__", [](const Var& v, const VarLike& w) { return comparison(v, w.object, "less"); })
        .def("__le__", [](const Var& v, const VarLike& w) { return comparison(v, w.object, "less_equal"); })
        .def("__gt__", [](const Var& v, const VarLike& w) { return comparison(v, w.object, "greater"); })
        .def("__ge__", [](const Var& v, const VarLike& w) { return comparison(v, w.object, "greater_equal"); });
}

}  // namespace nce::python
