#include "engine/worked_examples/op_worked_example.h"

#include "engine/error.h"
#include "engine/ops.h"
#include "engine/tensor_math.h"

namespace nce::worked_examples {

Tensor float64_matrix(std::initializer_list<std::initializer_list<double>> rows) {
    std::vector<double> values;
    int64_t columns = rows.size() == 0 ? 0 : static_cast<int64_t>(rows.begin()->size());
    for (const auto& row : rows) {
        NCE_CHECK(static_cast<int64_t>(row.size()) == columns, "float64_matrix: rows of different lengths");
        values.insert(values.end(), row.begin(), row.end());
    }
    return Tensor::from_vector(values, {static_cast<int64_t>(rows.size()), columns}, Dtype::Float64);
}

Tensor float64_vector(std::initializer_list<double> values) {
    return Tensor::from_vector(std::vector<double>(values), {static_cast<int64_t>(values.size())}, Dtype::Float64);
}

const OpWorkedExample* find_op_worked_example(const std::string& name) {
    for (const OpWorkedExample& example : op_worked_examples())
        if (example.name == name) return &example;
    return nullptr;
}

std::string op_example_page(const OpWorkedExample& example) {
    return "docs/derivations/ops/" + (example.page.empty() ? example.name : example.page) + ".md";
}

OpWorkedExampleRun run_op_worked_example(const OpWorkedExample& example) {
    OpWorkedExampleRun run;
    std::vector<Tensor> values;
    for (const ExampleInput& input : example.inputs) values.push_back(input.value);
    {
        NoGradGuard no_grad;  // the steps are plain math: nothing to record
        run.steps = example.steps(values, example.upstream);
    }

    std::vector<Var> inputs;
    for (const ExampleInput& input : example.inputs) inputs.emplace_back(input.value, input.differentiable);
    Var output = example.forward(inputs);
    run.output = output.value();
    if (example.upstream.defined()) {
        NCE_CHECK(example.upstream.shape() == run.output.shape(), "{}: the upstream weight W {} must have the output's "
                  "shape {}", example.name, shape_string(example.upstream.shape()), shape_string(run.output.shape()));
        run.loss = sum(example.upstream * run.output).item();  // L = sum(W ⊙ Y)
        if (output.requires_grad()) output.backward(example.upstream);  // dL/dY = W
    } else {
        NCE_CHECK(run.output.numel() == 1, "{}: the output {} is not a scalar, so the example needs an upstream "
                  "weight W", example.name, shape_string(run.output.shape()));
        run.loss = run.output.item();
        if (output.requires_grad()) output.backward();
    }

    for (size_t i = 0; i < example.inputs.size(); ++i) {
        if (!example.inputs[i].differentiable) continue;
        Tensor gradient = inputs[i].grad();
        if (!gradient.defined()) gradient = zeros_like(example.inputs[i].value);
        run.gradients.emplace_back(example.inputs[i].name, gradient);
    }
    for (const ExampleStep& step : run.steps) {
        for (const auto& [name, gradient] : run.gradients) {
            if (step.name != "d" + name) continue;
            NCE_CHECK(step.value.shape() == gradient.shape(), "{}: worked-example step {} has shape {}, the gradient {}",
                      example.name, step.name, shape_string(step.value.shape()), shape_string(gradient.shape()));
            run.checks.push_back({name, max_abs_difference(step.value, gradient)});
        }
    }
    return run;
}

}  // namespace nce::worked_examples
