// Every loss of the registry (losses/loss.h) as a Python function of the same name, made by
// a loop over the registry: a loss added there appears here with no binding code.
//
//   nce.infonce(q, p, tau=0.07)                 # inputs by position, in the registry's order
//   nce.infonce(q=q, p=p, neg=n, log_tau=t)     # or by name; parameters are keywords
//   nce.loss("infonce", q, p, tau=0.07)         # the same, by name
//
// Inputs are Vars (gradients flow back through them) or array-likes (constants). Parameters
// are numbers, booleans (flags), strings (choices) or lists (matryoshka's dims and weights);
// they reach the registry as the text `nce loss --set` would give it, so the validation and
// its one-line errors are the registry's own: a bad shape or parameter is a ValueError with
// the line `nce loss` prints.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>
#include <string>
#include <vector>

#include "losses/losses.h"
#include "python/bindings.h"
#include "python/numpy_conversion.h"

namespace nce::python {
namespace {

using losses::InputKind;
using losses::LossDefinition;

const char* kind_name(InputKind kind) {
    switch (kind) {
        case InputKind::Embedding: return "embedding";
        case InputKind::Scalar: return "scalar";
        case InputKind::Guide: return "guide";
        case InputKind::Data: return "data";
    }
    return "?";
}

const char* rule_name(losses::ParamRule rule) {
    switch (rule) {
        case losses::ParamRule::Positive: return "positive";
        case losses::ParamRule::NonNegative: return "non-negative";
        case losses::ParamRule::UnitInterval: return "unit interval";
        case losses::ParamRule::Flag: return "flag";
        case losses::ParamRule::Choice: return "choice";
        case losses::ParamRule::Text: return "text";
    }
    return "?";
}

// A parameter's value as the text `--set name=text` would carry. A float is written in the
// shortest form that reads back as the same double, so 0.07 reaches the loss as 0.07.
std::string parameter_text(py::handle value) {
    if (py::isinstance<py::bool_>(value)) return value.cast<bool>() ? "1" : "0";
    if (py::isinstance<py::int_>(value)) return py::str(value).cast<std::string>();
    if (py::isinstance<py::float_>(value)) return fmt::format("{}", value.cast<double>());
    if (py::isinstance<py::str>(value)) return value.cast<std::string>();
    if (py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value)) {
        std::vector<std::string> entries;
        for (py::handle entry : value) entries.push_back(parameter_text(entry));
        return fmt::format("{}", fmt::join(entries, ","));
    }
    throw py::type_error("nce: a loss parameter must be a number, bool, str or list, got " +
                         py::str(py::type::of(value)).cast<std::string>());
}

std::string signature(const LossDefinition& loss) {
    std::vector<std::string> parts;
    for (const losses::InputSpec& input : loss.inputs)
        parts.push_back(input.required ? input.name : input.name + "=None");
    if (!loss.params.empty()) parts.push_back("*");
    for (const losses::ParamSpec& param : loss.params) {
        bool textual = param.rule == losses::ParamRule::Choice || param.rule == losses::ParamRule::Text;
        parts.push_back(param.name + "=" + (textual ? "'" + param.default_value + "'" : param.default_value));
    }
    return fmt::format("{}({})", loss.name, fmt::join(parts, ", "));
}

std::string docstring(const LossDefinition& loss) {
    std::string text = signature(loss) + "\n\nThe registry's loss '" + loss.name + "' (nce loss " + loss.name +
                       "). Returns the scalar loss as a Var.\nInputs:";
    for (const losses::InputSpec& input : loss.inputs)
        text += fmt::format("\n  {} ({}{})", input.name, kind_name(input.kind), input.required ? "" : ", optional");
    for (const losses::ParamSpec& param : loss.params) {
        text += fmt::format("\nParameter {} = {} ({}", param.name, param.default_value, rule_name(param.rule));
        if (!param.choices.empty()) text += fmt::format(": {}", fmt::join(param.choices, "|"));
        text += ")";
    }
    text += fmt::format("\nShapes and the exact formula: docs/losses_contract.md. The backward, derived line by line: "
                        "docs/derivations/{}.md.", loss.name);
    return text;
}

// Calls `loss` as the docstring says: inputs by position or name, parameters by name.
Var call_loss(const LossDefinition& loss, const py::args& args, const py::kwargs& kwargs) {
    if (args.size() > loss.inputs.size())
        throw py::type_error(fmt::format("{}() takes at most {} inputs by position, got {}", loss.name,
                                         loss.inputs.size(), args.size()));
    std::map<std::string, py::object> given;
    for (size_t i = 0; i < args.size(); ++i)
        if (!args[i].is_none()) given[loss.inputs[i].name] = py::reinterpret_borrow<py::object>(args[i]);
    std::map<std::string, std::string> overrides;
    for (auto [key, value] : kwargs) {
        std::string name = key.cast<std::string>();
        bool is_input = false;
        for (const losses::InputSpec& input : loss.inputs) is_input = is_input || input.name == name;
        if (!is_input) {
            overrides[name] = parameter_text(value);  // an unknown name is the registry's error
            continue;
        }
        for (size_t i = 0; i < args.size(); ++i)
            if (loss.inputs[i].name == name)
                throw py::type_error(fmt::format("{}() got input '{}' both by position and by name", loss.name, name));
        if (!value.is_none()) given[name] = py::reinterpret_borrow<py::object>(value);
    }

    std::map<std::string, Tensor> tensors;
    for (const auto& [name, value] : given) tensors[name] = tensor_from_python(value);
    losses::LossArguments arguments = losses::make_arguments(loss, tensors, overrides);
    // make_arguments made fresh leaves; the caller's own Vars take their place, so the
    // gradient reaches them (and whatever made them). Arrays stay constants; data inputs
    // (qid, rank, score, label) never get a gradient.
    for (const losses::InputSpec& input : loss.inputs) {
        auto it = given.find(input.name);
        if (it == given.end() || input.kind == InputKind::Data) continue;
        if (py::isinstance<Var>(it->second)) arguments.inputs[input.name] = it->second.cast<Var>();
        else arguments.inputs[input.name] = Var(tensors[input.name]);
    }
    return loss.compute(arguments);
}

py::dict catalogue_entry(const LossDefinition& loss) {
    py::list inputs, params;
    for (const losses::InputSpec& input : loss.inputs)
        inputs.append(py::dict(py::arg("name") = input.name, py::arg("kind") = kind_name(input.kind),
                               py::arg("required") = input.required));
    for (const losses::ParamSpec& param : loss.params)
        params.append(py::dict(py::arg("name") = param.name, py::arg("default") = param.default_value,
                               py::arg("rule") = rule_name(param.rule), py::arg("choices") = param.choices));
    return py::dict(py::arg("name") = loss.name, py::arg("inputs") = inputs, py::arg("params") = params,
                    py::arg("signature") = signature(loss));
}

}  // namespace

void bind_losses(py::module_& module) {
    for (const LossDefinition& loss : losses::all_losses()) {
        const LossDefinition* definition = &loss;  // the registry is static: the pointer stays valid
        if (py::hasattr(module, loss.name.c_str())) {
            // Never shadow an op: the loss stays reachable as nce.loss(name, ...).
            PyErr_WarnEx(PyExc_RuntimeWarning,
                         fmt::format("nce: loss '{}' has the name of another function; use nce.loss('{}', ...)",
                                     loss.name, loss.name).c_str(), 1);
            continue;
        }
        module.def(loss.name.c_str(),
                   [definition](const py::args& args, const py::kwargs& kwargs) {
                       return call_loss(*definition, args, kwargs);
                   },
                   docstring(loss).c_str());
    }
    module.def("loss", [](const std::string& name, const py::args& args, const py::kwargs& kwargs) {
        return call_loss(losses::find_loss(name), args, kwargs);
    }, py::arg("name"), "nce.loss(NAME, *inputs, **inputs_and_parameters): any registered loss by its name");
    module.def("list_losses", [] {
        py::list entries;
        for (const LossDefinition& loss : losses::all_losses()) entries.append(catalogue_entry(loss));
        return entries;
    }, "Every registered loss: name, inputs (name, kind, required), parameters (name, default, rule, choices)");
    module.def("loss_example", [](const std::string& name, int64_t rows, int64_t dim, uint64_t seed, py::object dtype) {
        const LossDefinition& loss = losses::find_loss(name);
        NCE_CHECK(rows > 0 && dim > 0, "loss_example: rows and dim must be > 0, got {} and {}", rows, dim);
        Dtype wanted = dtype_from_python(dtype);
        Generator generator(seed);
        py::dict inputs;
        for (const auto& [input, value] : loss.example(generator, rows, dim)) {
            bool floating_data = is_floating(value.dtype()) && wanted != Dtype::Int64;
            inputs[py::str(input)] = tensor_to_numpy(floating_data ? value.to(wanted) : value);
        }
        return inputs;
    }, py::arg("name"), py::arg("rows") = 4, py::arg("dim") = 8, py::arg("seed") = 1, py::arg("dtype") = "float64",
       "A valid random problem for the loss (the registry's example): {input: ndarray}");
}

}  // namespace nce::python
