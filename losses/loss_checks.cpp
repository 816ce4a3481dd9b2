// Gradient checks for every loss, for `nce gradcheck`: each loss's `example` problem at two
// sizes, run through its `compute` (the same path as `nce loss`), against finite differences.
#include <algorithm>

#include "losses/losses.h"

namespace nce::losses {
namespace {

// "q[3,4] p[3,4] neg[2,4] log_tau[]": the inputs of one example, in the loss's order.
std::string describe(const std::vector<std::string>& names, const std::map<std::string, Tensor>& example) {
    std::string text;
    for (const std::string& name : names) {
        std::string shape = shape_string(example.at(name).shape());
        shape.erase(std::remove(shape.begin(), shape.end(), ' '), shape.end());
        text += (text.empty() ? "" : " ") + name + shape;
    }
    return text;
}

void add_loss_case(CheckRegistry& registry, const LossDefinition& loss, int64_t rows, int64_t dim) {
    // Which inputs the example gives (optional ones included when it has them), in the
    // loss's order; the check's positional inputs follow this list.
    Generator probe(1);
    std::map<std::string, Tensor> example = loss.example(probe, rows, dim);
    std::vector<std::string> names;
    std::vector<int> constant_inputs;
    for (const InputSpec& spec : loss.inputs) {
        if (!example.count(spec.name)) continue;
        bool constant = spec.kind == InputKind::Guide || spec.kind == InputKind::Data;
        if (constant) constant_inputs.push_back(static_cast<int>(names.size()));
        names.push_back(spec.name);
    }
    const LossArguments defaults = make_parameters(loss, {});

    CheckCase check;
    check.op = loss.name;
    check.description = describe(names, example);
    check.constant_inputs = constant_inputs;
    check.make_inputs = [example_of = loss.example, names, rows, dim, name = loss.name](Generator& generator, Dtype) {
        std::map<std::string, Tensor> drawn = example_of(generator, rows, dim);
        std::vector<Tensor> inputs;
        for (const std::string& input : names) {
            NCE_CHECK(drawn.count(input), "{}: its example gave no input {} this time", name, input);
            inputs.push_back(drawn.at(input));
        }
        return inputs;
    };
    check.function = [compute = loss.compute, names, defaults](const std::vector<Var>& inputs) {
        LossArguments arguments = defaults;
        for (size_t k = 0; k < names.size(); ++k) arguments.inputs.emplace(names[k], inputs[k]);
        return compute(arguments);
    };
    registry.add(std::move(check));
}

}  // namespace

void register_loss_checks(CheckRegistry& registry) {
    for (const LossDefinition& loss : all_losses()) {
        if (!loss.example || !loss.compute) continue;  // a loss not written yet
        add_loss_case(registry, loss, 3, 4);
        add_loss_case(registry, loss, 6, 5);
    }
}

}  // namespace nce::losses
