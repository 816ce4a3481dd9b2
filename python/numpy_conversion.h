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
struct VarLike {
    py::handle object;
    Var var() const { return var_from_python(object); }
};
struct ArrayLike {
    py::handle object;
    Tensor tensor() const { return tensor_from_python(object); }
};

}  // namespace nce::python

namespace pybind11::detail {

template <>
struct type_caster<nce::python::VarLike> {
    PYBIND11_TYPE_CASTER(nce::python::VarLike, const_name("Var | array_like"));
    bool load(handle source, bool) {
        value.object = source;
        return true;
    }
};

template <>
struct type_caster<nce::python::ArrayLike> {
    PYBIND11_TYPE_CASTER(nce::python::ArrayLike, const_name("array_like"));
    bool load(handle source, bool) {
        value.object = source;
        return true;
    }
};

}  // namespace pybind11::detail
