// The parts of the `nce` Python module, one concept per file; module.cpp calls each in turn.
#pragma once
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

namespace nce {
class Var;
}

namespace nce::python {

namespace py = pybind11;

void bind_errors(py::module_& module);          // errors_bindings.cpp: nce::Error -> ValueError
void bind_tensor(py::module_& module);          // tensor_bindings.cpp: nce.Tensor <-> NumPy
void bind_var(py::module_& module);             // var_bindings.cpp: nce.Var, nce.no_grad, nce.Generator
// var_operators_bindings.cpp: v + w, v ** 2, v.T, v[i], v.sum(), comparisons, ...
void bind_var_operators(py::class_<Var>& var_class);
// var_numpy_bindings.cpp: NumPy values beside a Var stay in the graph, or fail with one line
void bind_var_numpy_protocol(py::class_<Var>& var_class);
void bind_function(py::module_& module);        // function_bindings.cpp: nce.Function, ops written in Python
void bind_ops(py::module_& module);             // ops_bindings.cpp: every op of engine/ops.h
void bind_losses(py::module_& module);          // losses_bindings.cpp: every loss of the registry
void bind_gradcheck(py::module_& module);       // gradcheck_bindings.cpp: nce.gradcheck
void bind_check_backward(py::module_& module);  // check_backward_bindings.cpp: nce.check_backward
void bind_models(py::module_& module);          // models_bindings.cpp: models, checkpoints, optimizers
void bind_tokenizer(py::module_& module);       // tokenizer_bindings.cpp: nce.Tokenizer
void bind_search(py::module_& module);          // search_bindings.cpp: BM25, FAISS, metrics, passage index
void bind_graph(py::module_& module);           // graph_bindings.cpp: nce.to_dot, nce.keep_values

}  // namespace nce::python
