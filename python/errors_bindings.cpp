// Errors: the engine's nce::Error (one line naming the op, input, shape or parameter at
// fault) arrives in Python as ValueError with the same line; nce.Error is that ValueError's
// subclass, so `except nce.Error` and `except ValueError` both catch it. Other C++
// exceptions keep pybind11's mapping (std::bad_alloc -> MemoryError, std::out_of_range ->
// IndexError, any other std::exception -> RuntimeError).
#include "python/bindings.h"

#include "engine/error.h"

namespace nce::python {

void bind_errors(py::module_& module) {
    auto& error_type = py::register_exception<Error>(module, "Error", PyExc_ValueError);
    error_type.doc() = "A one-line error from the nce engine (a ValueError: bad shape, dtype or parameter)";
}

}  // namespace nce::python
