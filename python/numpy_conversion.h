// Moving values between NumPy and the engine.
//
//   in:  any array-like (ndarray, list, nce.Tensor) -> Tensor, copied into the engine's own
//        storage; float32 and float64 keep their dtype, integers and booleans become int64,
//        other dtypes (float16, complex, object) are a TypeError naming the accepted ones.
//   out: Tensor -> ndarray without a copy: the array reads the tensor's storage and keeps
//        it alive. It is read-only, because a graph's backward may still read the same
//        storage (np.array(x) or .copy() gives a writable copy).
#pragma once
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "engine/nce.h"

namespace nce::python {

namespace py = pybind11;

Tensor tensor_from_python(py::handle object);
// `object` as a Var: a Var as it is, anything else as a constant (no gradient).
Var var_from_python(py::handle object);
// None for an undefined tensor.
py::object tensor_to_numpy(const Tensor& tensor);

Dtype dtype_from_python(py::handle object);  // "float32", "float64", "int64" or a NumPy dtype
py::dtype numpy_dtype(Dtype dtype);

// The argument types of the ops and losses, so that help() shows what a parameter takes:
//   add(a: Var | array_like, b: Var | array_like) -> nce.Var
// VarLike: a Var (gradients flow through it) or any array-like (a constant).
// ArrayLike: any array-like, read as a tensor (masks, indices, targets): no gradient.
// The others only name what a parameter takes, for a function that reads it itself.
struct VarLike {
    static constexpr auto shown = py::detail::const_name("Var | array_like");
    py::handle object;
    Var var() const { return var_from_python(object); }
};
struct ArrayLike {
    static constexpr auto shown = py::detail::const_name("array_like");
    py::handle object;
    Tensor tensor() const { return tensor_from_python(object); }
};
struct DtypeLike {
    static constexpr auto shown = py::detail::const_name("str | numpy.dtype");
    py::handle object;
    Dtype dtype() const { return dtype_from_python(object); }
};
struct ShapeLike {
    static constexpr auto shown = py::detail::const_name("int | list[int]");
    py::handle object;
};
struct VarList {
    static constexpr auto shown = py::detail::const_name("list[Var]");
    py::handle object;
};
struct TextList {
    static constexpr auto shown = py::detail::const_name("list[str]");
    py::handle object;
};
struct IndexKey {
    static constexpr auto shown = py::detail::const_name("int | slice | tuple");
    py::handle object;
};

}  // namespace nce::python

namespace pybind11::detail {

// Takes any Python value, as the argument types above do; the function checks it.
template <typename Argument>
struct named_argument_caster {
    PYBIND11_TYPE_CASTER(Argument, Argument::shown);
    bool load(handle source, bool) {
        value.object = source;
        return true;
    }
};
template <> struct type_caster<nce::python::VarLike> : named_argument_caster<nce::python::VarLike> {};
template <> struct type_caster<nce::python::ArrayLike> : named_argument_caster<nce::python::ArrayLike> {};
template <> struct type_caster<nce::python::DtypeLike> : named_argument_caster<nce::python::DtypeLike> {};
template <> struct type_caster<nce::python::ShapeLike> : named_argument_caster<nce::python::ShapeLike> {};
template <> struct type_caster<nce::python::VarList> : named_argument_caster<nce::python::VarList> {};
template <> struct type_caster<nce::python::TextList> : named_argument_caster<nce::python::TextList> {};
template <> struct type_caster<nce::python::IndexKey> : named_argument_caster<nce::python::IndexKey> {};

}  // namespace pybind11::detail
