// nce.gradcheck: the engine's gradient checker (engine/gradcheck.h) on any Python function
// of Vars, or on the engine's own registered cases by name. It prints the table
// `nce gradcheck` prints (same header, columns and summary, through Python's print so a
// notebook shows it) and returns the rows as data.
//
//   rows = nce.gradcheck(lambda a, b: nce.sum(nce.matmul(a, b)), [A, B])
//   rows[0]["max_rel_error"], rows[0]["passed"]
//   nce.gradcheck("infonce")        # the registered cases of one op or loss ("all": every one)
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "engine/nce.h"
#include "losses/loss.h"
#include "nn/module_checks.h"
#include "python/bindings.h"
#include "python/numpy_conversion.h"

namespace nce::python {
namespace {

void print_line(const std::string& line) { py::print(line); }

// The three lines around the rows, as `nce gradcheck` writes them.
void print_header(Dtype dtype, uint64_t seed) {
    print_line(fmt::format("gradcheck: central differences, {} (threads {}, seed {})", dtype_name(dtype), num_threads(),
                           seed));
    print_line(fmt::format("{:<22} {:<40} {:>12} {:>12}  {}", "op", "inputs", "max abs err", "max rel err", "result"));
}

void print_row(const std::string& op, const std::string& description, const GradcheckResult& result) {
    print_line(fmt::format("{:<22} {:<40} {:>12.3e} {:>12.3e}  {}", op, description, result.max_abs_error,
                           result.max_rel_error, result.passed ? "pass" : "FAIL"));
}

void print_summary(int passed, int failed, double tolerance) {
    print_line(fmt::format("{} passed, {} failed (tolerance {:.0e} on the relative error)", passed, failed, tolerance));
}

void print_jacobians(const InputReport& report) {
    print_line(fmt::format("    input {} {}: analytic | numeric Jacobian ({} output x {} input elements)", report.index,
                           shape_string(report.shape), report.rows, report.columns));
    for (int64_t r = 0; r < report.rows; ++r) {
        std::string analytic, numeric;
        for (int64_t c = 0; c < report.columns; ++c) {
            analytic += fmt::format("{:>10.5f}", report.analytic[r * report.columns + c]);
            numeric += fmt::format("{:>10.5f}", report.numeric[r * report.columns + c]);
        }
        print_line(fmt::format("    {} | {}", analytic, numeric));
    }
}

py::object jacobian_array(const std::vector<double>& values, int64_t rows, int64_t columns) {
    if (values.empty()) return py::none();
    return tensor_to_numpy(Tensor::from_vector(values, {rows, columns}, Dtype::Float64));
}

py::dict row_data(const std::string& op, const std::string& description, const GradcheckResult& result) {
    py::list inputs;
    for (const InputReport& report : result.inputs)
        inputs.append(py::dict(py::arg("index") = report.index, py::arg("shape") = py::tuple(py::cast(report.shape)),
                               py::arg("full_jacobian") = report.full_jacobian,
                               py::arg("max_abs_error") = report.max_abs_error,
                               py::arg("max_rel_error") = report.max_rel_error,
                               py::arg("analytic") = jacobian_array(report.analytic, report.rows, report.columns),
                               py::arg("numeric") = jacobian_array(report.numeric, report.rows, report.columns)));
    return py::dict(py::arg("op") = op, py::arg("inputs") = description,
                    py::arg("max_abs_error") = result.max_abs_error, py::arg("max_rel_error") = result.max_rel_error,
                    py::arg("passed") = result.passed, py::arg("tolerance") = result.tolerance,
                    py::arg("per_input") = inputs);
}

// The function's row name: name=, else its __name__.
std::string function_name(const py::function& function, const py::object& name) {
    if (!name.is_none()) return name.cast<std::string>();
    if (py::hasattr(function, "__name__")) return py::str(function.attr("__name__")).cast<std::string>();
    return "function";
}

py::list check_function(const py::function& function, const py::sequence& raw_inputs, const GradcheckOptions& options,
                        const std::string& op, bool verbose, bool quiet) {
    std::vector<Tensor> inputs;
    std::vector<std::string> shapes;
    for (py::handle input : raw_inputs) {
        inputs.push_back(tensor_from_python(input));
        shapes.push_back(shape_string(inputs.back().shape()));
    }
    NCE_CHECK(!inputs.empty(), "gradcheck: give the function at least one input");
    CheckedFunction checked = [&function, &op](const std::vector<Var>& vars) {
        py::tuple arguments(vars.size());
        for (size_t i = 0; i < vars.size(); ++i) arguments[i] = py::cast(vars[i]);
        py::object output = function(*arguments);
        if (!py::isinstance<Var>(output))
            throw py::type_error(fmt::format("gradcheck: {} must return an nce.Var, got {}", op,
                                             py::str(py::type::of(output)).cast<std::string>()));
        return output.cast<Var>();
    };
    GradcheckResult result = gradcheck(checked, inputs, options);
    std::string description = fmt::format("{}", fmt::join(shapes, ", "));
    if (!quiet) {
        print_header(options.dtype, options.seed);
        print_row(op, description, result);
        if (verbose)
            for (const InputReport& report : result.inputs)
                if (report.full_jacobian && report.rows * report.columns <= 400) print_jacobians(report);
        print_summary(result.passed ? 1 : 0, result.passed ? 0 : 1, result.tolerance);
    }
    py::list rows;
    rows.append(row_data(op, description, result));
    return rows;
}

// What nce.gradcheck returns: its rows (a list of dicts: index, iterate, len), with a repr of
// one line per op (its cases, pass or FAIL, the worst relative error), so that a notebook cell
// ending in nce.gradcheck("all") shows a short summary under the table, not every row's dict.
struct GradcheckReport {
    py::list rows;

    bool passed() const {
        for (py::handle row : rows)
            if (!row["passed"].cast<bool>()) return false;
        return true;
    }

    std::string summary() const {
        std::vector<std::string> order;
        std::map<std::string, std::tuple<int, int, double>> by_op;  // cases, failed, worst relative error
        for (py::handle row : rows) {
            std::string op = row["op"].cast<std::string>();
            if (by_op.count(op) == 0) order.push_back(op);
            auto& [cases, failed, worst] = by_op[op];
            ++cases;
            failed += row["passed"].cast<bool>() ? 0 : 1;
            worst = std::max(worst, row["max_rel_error"].cast<double>());
        }
        int failed_ops = 0;
        std::string lines;
        for (const std::string& op : order) {
            const auto& [cases, failed, worst] = by_op[op];
            failed_ops += failed > 0 ? 1 : 0;
            lines += fmt::format("  {:<22} {:>3} case{}  {}  worst rel err {:.1e}\n", op, cases, cases == 1 ? " " : "s",
                                 failed > 0 ? fmt::format("FAIL ({} of {})", failed, cases) : "pass", worst);
        }
        return fmt::format("<nce gradcheck: {} op{}, {} failed; rows[i] for every case's numbers>\n{}", order.size(),
                           order.size() == 1 ? "" : "s", failed_ops, lines);
    }
};

// The registered cases `nce gradcheck NAME` (or --all, name "all") runs, with its messages.
py::list check_registered(const std::string& name, Dtype dtype, uint64_t seed, bool verbose, bool quiet) {
    CheckRegistry registry;
    register_engine_checks(registry);
    losses::register_loss_checks(registry);
    nn::register_module_checks(registry);
    std::vector<std::string> ops = registry.ops();
    bool all = name == "all";
    NCE_CHECK(all || std::find(ops.begin(), ops.end(), name) != ops.end(), "gradcheck: unknown op '{}'; known ops: {}",
              name, fmt::join(ops, ", "));
    if (!quiet) print_header(dtype, seed);
    py::list rows;
    int passed = 0, failed = 0;
    double tolerance = 0;
    for (const CheckCase& check : registry.cases()) {
        if (!all && check.op != name) continue;
        GradcheckResult result = run_check(check, dtype, seed);
        tolerance = result.tolerance;
        if (!quiet) {
            print_row(check.op, check.description, result);
            if (verbose)
                for (const InputReport& report : result.inputs)
                    if (report.full_jacobian && report.rows * report.columns <= 400) print_jacobians(report);
        }
        rows.append(row_data(check.op, check.description, result));
        (result.passed ? passed : failed)++;
    }
    if (!quiet) print_summary(passed, failed, tolerance);
    return rows;
}

}  // namespace

void bind_gradcheck(py::module_& module) {
    py::class_<GradcheckReport>(module, "GradcheckReport",
                                "What nce.gradcheck returns: its rows as a list of dicts (report[i], len, iteration), "
                                "passed (every case), and a repr of one line per op")
        .def_property_readonly("passed", &GradcheckReport::passed, "every case passed")
        .def_property_readonly("rows", [](const GradcheckReport& r) { return r.rows; }, "every case's dict")
        .def("__len__", [](const GradcheckReport& r) { return r.rows.size(); })
        .def("__getitem__", [](const GradcheckReport& r, py::object index) -> py::object { return r.rows[index]; },
             py::arg("index"))
        .def("__iter__", [](const GradcheckReport& r) { return r.rows.attr("__iter__")(); })
        .def("__repr__", &GradcheckReport::summary);
    module.def(
        "gradcheck",
        [](py::object target, py::object inputs, double eps, py::object dtype, double tolerance, uint64_t seed,
           std::vector<int> constant_inputs, py::object name, bool verbose, bool quiet) {
            Dtype check_dtype = dtype_from_python(dtype);
            NCE_CHECK(is_floating(check_dtype), "gradcheck: dtype must be float32 or float64");
            if (py::isinstance<py::str>(target)) {
                NCE_CHECK(inputs.is_none(), "gradcheck: a registered op ('{}') brings its own inputs; pass none",
                          target.cast<std::string>());
                return GradcheckReport{check_registered(target.cast<std::string>(), check_dtype, seed, verbose, quiet)};
            }
            if (!py::isinstance<py::function>(target))
                throw py::type_error("gradcheck: the first argument is a function of Vars or a registered op's name");
            if (inputs.is_none()) throw py::type_error("gradcheck: give the function's inputs (a list of arrays)");
            GradcheckOptions options;
            options.dtype = check_dtype;
            options.eps = eps;
            options.tolerance = tolerance;
            options.seed = seed;
            options.constant_inputs = std::move(constant_inputs);
            py::function function = target.cast<py::function>();
            return GradcheckReport{check_function(function, inputs.cast<py::sequence>(), options,
                                                  function_name(function, name), verbose, quiet)};
        },
        py::arg("fn"), py::arg("inputs") = py::none(), py::kw_only(), py::arg("eps") = 0.0,
        py::arg("dtype") = "float64", py::arg("tolerance") = 0.0, py::arg("seed") = 1,
        py::arg("constant_inputs") = std::vector<int>{}, py::arg("name") = py::none(), py::arg("verbose") = false,
        py::arg("quiet") = false,
        "gradcheck(fn, inputs, *, eps=0 (1e-6 in float64, 1e-3 in float32), dtype='float64', tolerance=0 (the "
        "engine's default), seed=1, constant_inputs=[], name=None, verbose=False, quiet=False)\n\n"
        "Checks fn's backward (fn: Vars -> Var) against central differences with the engine's checker, prints the "
        "`nce gradcheck` table and returns an nce.GradcheckReport: its repr one line per op, report.passed, and "
        "the rows as dicts (op, inputs, max_abs_error, max_rel_error, passed, tolerance, per_input) by index or "
        "iteration. fn may instead be a registered op or loss name, or 'all', as `nce gradcheck NAME`.");
}

}  // namespace nce::python
