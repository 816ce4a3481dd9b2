// nce.to_dot and nce.keep_values(): the autograd graph as Graphviz DOT (engine/graph_dot.h).
//
//   with nce.keep_values():            # nodes made inside keep their values and gradients
//       loss = nce.infonce(q, p, tau=0.1)
//   loss.backward()
//   text = nce.to_dot(loss, values=True, names={"q": q, "p": p})   # dot -Tsvg draws it
#include <map>
#include <optional>
#include <string>

#include "engine/graph_dot.h"
#include "python/bindings.h"

namespace nce::python {
namespace {

// `with nce.keep_values():` holds the engine's KeepValuesGuard from __enter__ to __exit__.
class KeepValuesContext {
public:
    void enter() {
        if (guard_) throw py::value_error("nce.keep_values: this context is already entered");
        guard_.emplace();
    }
    void exit() { guard_.reset(); }

private:
    std::optional<KeepValuesGuard> guard_;
};

}  // namespace

void bind_graph(py::module_& module) {
    py::class_<KeepValuesContext>(module, "keep_values",
                                  "with nce.keep_values(): nodes made inside keep their values and, after a backward, "
                                  "their gradients, for nce.to_dot(..., values=True)")
        .def(py::init<>())
        .def("__enter__", [](KeepValuesContext& context) { context.enter(); return &context; },
             py::return_value_policy::reference)
        .def("__exit__", [](KeepValuesContext& context, py::args) { context.exit(); return false; });
    module.def(
        "to_dot",
        [](const Var& output, bool values, const std::map<std::string, Var>& names, const std::string& title) {
            DotOptions options;
            options.with_values = values;
            options.title = title;
            for (const auto& [name, var] : names) options.names.emplace_back(name, var);
            return to_dot(output, options);
        },
        py::arg("output"), py::arg("values") = false, py::arg("names") = std::map<std::string, Var>{},
        py::arg("title") = "",
        "Graphviz DOT of the autograd graph behind `output`: each op with its shape and dtype; values=True adds "
        "value and gradient norms (intermediate ones for a graph built inside nce.keep_values()); names labels "
        "Vars by name. The same graph gives the same text.");
}

}  // namespace nce::python
