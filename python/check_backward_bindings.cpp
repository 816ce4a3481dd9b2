// nce.check_backward: a hand-written backward checked against central differences, in
// float64, before it is written in C++.
//
//   def forward(q, p):            return infonce_loss(q, p)       # NumPy in, a number or array out
//   def backward(grad, q, p):     return dq, dp                   # grad: dL/d(output), output's shape
//   r = nce.check_backward(forward, backward, {"q": q, "p": p})
//   r.passed, r.max_rel_error, r.worst      # worst: {"input": "p", "index": (2, 1), "analytic", "numeric", ...}
//
// With output y = forward(x...), the check takes s = sum(w · y) for fixed weights w (w = 1
// for a one-element output, else a seeded normal draw: every output element counts) and
// compares backward(w, x...) with the numeric gradient of s, entry by entry:
//   numeric[j] = (s(x + eps e_j) - s(x - eps e_j)) / (2 eps)
// over every entry j of every float input (integer inputs are data: passed along, not
// perturbed, their gradient ignored). Per input, an entry's relative error is
// |analytic - numeric| / max(the largest |entry| of the two gradients of that input, 1e-3);
// the floor keeps an input whose gradient is zero from failing on rounding noise, which is
// about 1e-16 |s| / eps. The check passes when every relative error is at most `tolerance`.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "engine/nce.h"
#include "python/bindings.h"
#include "python/numpy_conversion.h"

namespace nce::python {
namespace {

constexpr double kScaleFloor = 1e-3;

struct CheckedInput {
    std::string name;
    py::array_t<double> value;  // float64, C order, owned by the check
    py::object passed;          // what forward and backward receive (the integer arrays as they are)
    bool checked = true;        // false for integer (data) inputs
};

struct InputCheck {
    std::string name;
    std::vector<int64_t> shape;
    double max_abs_error = 0;
    double max_rel_error = 0;
    py::object analytic, numeric;
};

struct WorstEntry {
    std::string input;
    std::vector<int64_t> index;
    double analytic = 0, numeric = 0, abs_error = 0, rel_error = 0;
};

struct CheckBackwardResult {
    bool passed = false;
    double max_abs_error = 0;
    double max_rel_error = 0;
    double tolerance = 0;
    double eps = 0;
    std::vector<InputCheck> inputs;
    bool has_worst = false;
    WorstEntry worst;

    std::string report() const {
        std::string text = fmt::format(
            "check_backward: central differences in float64 (eps {:g}): {} (max rel err {:.3e}, tolerance {:.0e})",
            eps, passed ? "pass" : "FAIL", max_rel_error, tolerance);
        for (const InputCheck& input : inputs)
            text += fmt::format("\n  {:<12} {:<16} max abs err {:.3e}  max rel err {:.3e}", input.name,
                                shape_string(input.shape), input.max_abs_error, input.max_rel_error);
        if (has_worst)
            text += fmt::format("\n  worst entry: {}[{}]  analytic {:.10g}  numeric {:.10g}  abs err {:.3e}  rel err {:.3e}",
                                worst.input, fmt::join(worst.index, ", "), worst.analytic, worst.numeric,
                                worst.abs_error, worst.rel_error);
        return text;
    }
};

std::vector<int64_t> unravel(int64_t flat, const std::vector<int64_t>& shape) {
    std::vector<int64_t> index(shape.size());
    for (size_t axis = shape.size(); axis-- > 0;) {
        index[axis] = flat % shape[axis];
        flat /= shape[axis];
    }
    return index;
}

std::vector<int64_t> array_shape(const py::array& array) {
    return std::vector<int64_t>(array.shape(), array.shape() + array.ndim());
}

// The output of forward as float64, C order.
py::array_t<double> forward_output(const py::function& forward, const std::vector<CheckedInput>& inputs) {
    py::tuple arguments(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) arguments[i] = inputs[i].passed;
    py::object output = forward(*arguments);
    auto array = py::array_t<double, py::array::c_style | py::array::forcecast>::ensure(output);
    if (!array) throw py::type_error("check_backward: forward must return a number or an array of numbers");
    return array;
}

double weighted_sum(const py::array_t<double>& output, const std::vector<double>& weights) {
    NCE_CHECK(static_cast<size_t>(output.size()) == weights.size(),
              "check_backward: forward's output changed size between calls ({} then {} elements)", weights.size(),
              output.size());
    const double* values = output.data();
    double total = 0;
    for (size_t i = 0; i < weights.size(); ++i) total += weights[i] * values[i];
    return total;
}

// backward's result as one gradient per input: a tuple or list in input order, a dict by
// input name, or a single array when there is one input.
std::vector<py::object> backward_gradients(const py::object& result, const std::vector<CheckedInput>& inputs) {
    std::vector<py::object> grads(inputs.size(), py::none());
    if (py::isinstance<py::dict>(result)) {
        py::dict by_name = result.cast<py::dict>();
        for (size_t i = 0; i < inputs.size(); ++i)
            if (by_name.contains(inputs[i].name)) grads[i] = by_name[py::str(inputs[i].name)];
        return grads;
    }
    if (py::isinstance<py::tuple>(result) || py::isinstance<py::list>(result)) {
        py::sequence sequence = result.cast<py::sequence>();
        NCE_CHECK(sequence.size() == inputs.size(),
                  "check_backward: backward returned {} gradients for {} inputs (one per input, None for data)",
                  sequence.size(), inputs.size());
        for (size_t i = 0; i < inputs.size(); ++i) grads[i] = sequence[i];
        return grads;
    }
    NCE_CHECK(inputs.size() == 1,
              "check_backward: backward returned one array for {} inputs; return a tuple (one per input) or a dict",
              inputs.size());
    grads[0] = result;
    return grads;
}

CheckBackwardResult check_backward(const py::function& forward, const py::function& backward, const py::object& raw,
                                   double eps, double tolerance, uint64_t seed) {
    NCE_CHECK(eps > 0 && std::isfinite(eps), "check_backward: eps must be a finite number > 0, got {}", eps);
    NCE_CHECK(tolerance > 0, "check_backward: tolerance must be > 0, got {}", tolerance);
    // 1. The inputs, copied to float64 (named by the dict's keys, else input 0, 1, ...).
    std::vector<CheckedInput> inputs;
    auto add_input = [&inputs](std::string name, py::handle value) {
        CheckedInput input;
        input.name = std::move(name);
        py::array array = py::array::ensure(value);
        if (!array) throw py::type_error("check_backward: input " + input.name + " is not array-like");
        char kind = array.dtype().kind();
        input.checked = kind == 'f';
        if (!input.checked && kind != 'i' && kind != 'u' && kind != 'b')
            throw py::type_error("check_backward: input " + input.name + " must hold floats (or integers, as data)");
        input.value = py::array_t<double, py::array::c_style | py::array::forcecast>(array.attr("astype")("float64"));
        input.passed = input.checked ? py::object(input.value) : py::object(array);
        inputs.push_back(std::move(input));
    };
    if (py::isinstance<py::dict>(raw)) {
        for (auto [name, value] : raw.cast<py::dict>()) add_input(py::str(name).cast<std::string>(), value);
    } else {
        int position = 0;
        for (py::handle value : raw.cast<py::sequence>()) add_input(fmt::format("input {}", position++), value);
    }
    NCE_CHECK(!inputs.empty(), "check_backward: give at least one input");

    // 2. The output and its weights: 1 for one element, else a seeded normal draw.
    py::array_t<double> output = forward_output(forward, inputs);
    std::vector<int64_t> output_shape = array_shape(output);
    std::vector<double> weights(static_cast<size_t>(output.size()), 1.0);
    if (weights.size() > 1) {
        Generator generator(seed);
        weights = generator.normal({static_cast<int64_t>(weights.size())}, Dtype::Float64).to_vector();
    }
    py::array_t<double> weight_array(output_shape);
    std::copy(weights.begin(), weights.end(), weight_array.mutable_data());

    // 3. The hand-written backward, on copies (it cannot disturb the inputs being perturbed).
    py::tuple arguments(inputs.size() + 1);
    arguments[0] = weight_array;
    for (size_t i = 0; i < inputs.size(); ++i)
        arguments[i + 1] = inputs[i].checked ? py::object(py::array_t<double>(inputs[i].value.attr("copy")()))
                                             : inputs[i].passed;
    std::vector<py::object> grads = backward_gradients(backward(*arguments), inputs);

    // 4. Central differences over every entry, compared input by input.
    CheckBackwardResult result;
    result.tolerance = tolerance;
    result.eps = eps;
    for (size_t i = 0; i < inputs.size(); ++i) {
        CheckedInput& input = inputs[i];
        if (!input.checked) continue;
        std::vector<int64_t> shape = array_shape(input.value);
        NCE_CHECK(!grads[i].is_none(), "check_backward: backward returned None for {}, a float input", input.name);
        auto analytic = py::array_t<double, py::array::c_style | py::array::forcecast>::ensure(grads[i]);
        if (!analytic) throw py::type_error("check_backward: the gradient of " + input.name + " is not an array");
        NCE_CHECK(array_shape(analytic) == shape,
                  "check_backward: backward's gradient of {} has shape {}, the input has shape {}", input.name,
                  shape_string(array_shape(analytic)), shape_string(shape));
        py::array_t<double> numeric(shape);
        double* x = input.value.mutable_data();
        for (py::ssize_t j = 0; j < input.value.size(); ++j) {
            double original = x[j];
            x[j] = original + eps;
            double plus = weighted_sum(forward_output(forward, inputs), weights);
            x[j] = original - eps;
            double minus = weighted_sum(forward_output(forward, inputs), weights);
            x[j] = original;
            numeric.mutable_data()[j] = (plus - minus) / (2 * eps);
        }
        InputCheck check;
        check.name = input.name;
        check.shape = shape;
        const double* a = analytic.data();
        const double* n = numeric.data();
        double scale = kScaleFloor;
        for (py::ssize_t j = 0; j < numeric.size(); ++j) scale = std::max({scale, std::abs(a[j]), std::abs(n[j])});
        for (py::ssize_t j = 0; j < numeric.size(); ++j) {
            double abs_error = std::abs(a[j] - n[j]);
            if (!std::isfinite(abs_error)) abs_error = std::numeric_limits<double>::infinity();
            double rel_error = abs_error / scale;
            check.max_abs_error = std::max(check.max_abs_error, abs_error);
            check.max_rel_error = std::max(check.max_rel_error, rel_error);
            if (!result.has_worst || rel_error > result.worst.rel_error) {
                result.has_worst = true;
                result.worst = {input.name, unravel(j, shape), a[j], n[j], abs_error, rel_error};
            }
        }
        check.analytic = analytic;
        check.numeric = numeric;
        result.max_abs_error = std::max(result.max_abs_error, check.max_abs_error);
        result.max_rel_error = std::max(result.max_rel_error, check.max_rel_error);
        result.inputs.push_back(std::move(check));
    }
    NCE_CHECK(!result.inputs.empty(), "check_backward: no float input to check (integer inputs are data)");
    result.passed = result.max_rel_error <= tolerance;
    return result;
}

}  // namespace

void bind_check_backward(py::module_& module) {
    py::class_<CheckBackwardResult>(module, "CheckBackwardResult",
                                    "What nce.check_backward found: passed, the errors, the worst entry, and per input "
                                    "the analytic and numeric gradients")
        .def_readonly("passed", &CheckBackwardResult::passed)
        .def_readonly("max_abs_error", &CheckBackwardResult::max_abs_error)
        .def_readonly("max_rel_error", &CheckBackwardResult::max_rel_error)
        .def_readonly("tolerance", &CheckBackwardResult::tolerance)
        .def_readonly("eps", &CheckBackwardResult::eps)
        .def_property_readonly("worst", [](const CheckBackwardResult& r) -> py::object {
            if (!r.has_worst) return py::none();
            return py::dict(py::arg("input") = r.worst.input, py::arg("index") = py::tuple(py::cast(r.worst.index)),
                            py::arg("analytic") = r.worst.analytic, py::arg("numeric") = r.worst.numeric,
                            py::arg("abs_error") = r.worst.abs_error, py::arg("rel_error") = r.worst.rel_error);
        })
        .def_property_readonly("inputs", [](const CheckBackwardResult& r) {
            py::list inputs;
            for (const InputCheck& input : r.inputs)
                inputs.append(py::dict(py::arg("name") = input.name, py::arg("shape") = py::tuple(py::cast(input.shape)),
                                       py::arg("max_abs_error") = input.max_abs_error,
                                       py::arg("max_rel_error") = input.max_rel_error,
                                       py::arg("analytic") = input.analytic, py::arg("numeric") = input.numeric));
            return inputs;
        })
        .def("__bool__", [](const CheckBackwardResult& r) { return r.passed; })
        .def("__str__", &CheckBackwardResult::report)
        .def("__repr__", &CheckBackwardResult::report);

    module.def("check_backward", &check_backward, py::arg("forward"), py::arg("backward"), py::arg("inputs"),
               py::kw_only(), py::arg("eps") = 1e-6, py::arg("tolerance") = 1e-6, py::arg("seed") = 1,
               "check_backward(forward, backward, inputs, *, eps=1e-6, tolerance=1e-6, seed=1)\n\n"
               "Checks a hand-written backward against central differences in float64. forward(*inputs) returns a "
               "number or array y; backward(grad, *inputs) returns dL/dx for each input (a tuple in input order, a "
               "dict by name, or one array for one input) given grad = dL/dy of y's shape. inputs: a dict "
               "{name: array} (the names appear in the report) or a list. Returns a CheckBackwardResult: passed, "
               "max_rel_error, worst (input, index, analytic, numeric, abs_error, rel_error), inputs.");
}

}  // namespace nce::python
