// The arithmetic behind nce.Var's Python operators, shared by the operators themselves
// (var_operators_bindings.cpp) and by NumPy's ufuncs on a Var (var_numpy_bindings.cpp), so
// `v * a`, `a * v` and `np.multiply(a, v)` build the same graph.
#pragma once
#include <optional>
#include <string>

#include "python/numpy_conversion.h"

namespace nce::python {

// A Python or NumPy number (np.float32(2), np.int64(3)), or a 0-d array, as a double;
// nullopt for anything else (booleans included).
std::optional<double> as_number(py::handle object);

// a op b for op "add", "subtract", "multiply", "divide" or "power", where at least one side
// is a Var. A number on either side gives the op with a scalar (the Var keeps its dtype);
// anything else array-like becomes a constant Var.
Var var_arithmetic(const std::string& op, py::handle a, py::handle b);

}  // namespace nce::python
