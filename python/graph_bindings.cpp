// nce.to_dot and nce.keep_values(): the autograd graph as Graphviz DOT (engine/graph_dot.h).
//
//   with nce.keep_values():            # nodes made inside keep their values and gradients
//       loss = nce.infonce(q, p, tau=0.1)
//   loss.backward()
//   text = nce.to_dot(loss, values=True, names={"q": q, "p": p})   # dot -Tsvg draws it
//   nce.draw(loss, values=True)        # the same as a Graph: Jupyter shows it drawn inline
#include <algorithm>
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

// What nce.draw returns: the DOT text, drawn by Graphviz's `dot` where it is installed.
// Jupyter asks _repr_svg_ first (None without `dot`: it then takes _repr_markdown_, the text
// in a fenced block), so a notebook shows the picture inline, or the text it would come from.
struct Graph {
    std::string dot;

    static py::object dot_program() { return py::module_::import("shutil").attr("which")("dot"); }

    py::object svg() const {
        py::object program = dot_program();
        if (program.is_none()) return py::none();
        py::object done = py::module_::import("subprocess").attr("run")(
            py::make_tuple(program, "-Tsvg"), py::arg("input") = dot, py::arg("capture_output") = true,
            py::arg("text") = true, py::arg("timeout") = 120);
        if (done.attr("returncode").cast<int>() != 0) return py::none();
        return done.attr("stdout");
    }
};

std::string graph_dot(const Var& output, bool values, const std::map<std::string, Var>& names, const std::string& title) {
    DotOptions options;
    options.with_values = values;
    options.title = title;
    for (const auto& [name, var] : names) options.names.emplace_back(name, var);
    return to_dot(output, options);
}

}  // namespace

void bind_graph(py::module_& module) {
    py::class_<KeepValuesContext>(module, "keep_values",
                                  "with nce.keep_values(): nodes made inside keep their values and, after a backward, "
                                  "their gradients, for nce.to_dot(..., values=True)")
        .def(py::init<>())
        .def("__enter__", [](KeepValuesContext& context) { context.enter(); return &context; },
             py::return_value_policy::reference)
        .def("__exit__", [](KeepValuesContext& context, py::args) { context.exit(); return false; });
    module.def("to_dot", &graph_dot,
        py::arg("output"), py::arg("values") = false, py::arg("names") = std::map<std::string, Var>{},
        py::arg("title") = "",
        "Graphviz DOT of the autograd graph behind `output`: each op with its shape and dtype; values=True adds "
        "value and gradient norms (intermediate ones for a graph built inside nce.keep_values()); names labels "
        "Vars by name. The same graph gives the same text.");

    py::class_<Graph>(module, "Graph",
                      "An autograd graph as nce.draw gives it: str() is its Graphviz DOT text; in Jupyter it is drawn "
                      "inline (with Graphviz's dot installed; else the DOT text is shown); save('g.svg' or 'g.dot')")
        .def_property_readonly("dot", [](const Graph& g) { return g.dot; }, "the Graphviz DOT text")
        .def("__str__", [](const Graph& g) { return g.dot; })
        .def("__repr__", [](const Graph& g) {
            return "<nce.Graph: " + std::to_string(std::count(g.dot.begin(), g.dot.end(), '\n')) +
                   " lines of DOT; str() gives them, Jupyter draws them>";
        })
        .def("_repr_svg_", &Graph::svg)
        .def("_repr_markdown_", [](const Graph& g) -> py::object {
            if (!Graph::dot_program().is_none()) return py::none();  // the SVG is shown
            return py::str("Graphviz's `dot` is not installed here; the graph as DOT text:\n\n```dot\n" + g.dot +
                           "```\n");
        })
        .def("save", [](const Graph& g, const std::string& path) {
            bool svg = path.size() >= 4 && path.compare(path.size() - 4, 4, ".svg") == 0;
            py::object text = svg ? g.svg() : py::str(g.dot);
            if (text.is_none())
                throw py::value_error("nce.Graph.save: " + path + " needs Graphviz's dot (apt install graphviz); "
                                      "save to a .dot file instead");
            py::object file = py::module_::import("builtins").attr("open")(path, "w", py::arg("encoding") = "utf-8");
            file.attr("write")(text);
            file.attr("close")();
        }, py::arg("path"), "write the graph: an .svg path is drawn by Graphviz's dot, any other gets the DOT text");
    module.def(
        "draw",
        [](const Var& output, bool values, const std::map<std::string, Var>& names, const std::string& title) {
            return Graph{graph_dot(output, values, names, title)};
        },
        py::arg("output"), py::arg("values") = false, py::arg("names") = std::map<std::string, Var>{},
        py::arg("title") = "",
        "nce.to_dot's graph as an nce.Graph: drawn inline in Jupyter (Graphviz's dot), str() the DOT text, "
        "save('graph.svg')");
}

}  // namespace nce::python
