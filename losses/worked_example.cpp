#include "losses/worked_example.h"

#include <cmath>

namespace nce::losses {

Tensor matrix(std::initializer_list<std::initializer_list<double>> rows) {
    std::vector<double> values;
    int64_t columns = rows.size() == 0 ? 0 : static_cast<int64_t>(rows.begin()->size());
    for (const auto& row : rows) {
        NCE_CHECK(static_cast<int64_t>(row.size()) == columns, "matrix: rows of different lengths");
        values.insert(values.end(), row.begin(), row.end());
    }
    return Tensor::from_vector(values, {static_cast<int64_t>(rows.size()), columns}, Dtype::Float64);
}

Tensor identity(int64_t n) {
    std::vector<double> values(static_cast<size_t>(n * n), 0.0);
    for (int64_t i = 0; i < n; ++i) values[static_cast<size_t>(i * n + i)] = 1.0;
    return Tensor::from_vector(values, {n, n}, Dtype::Float64);
}

std::map<std::string, Tensor> grouped_example_inputs() {
    return {{"q", matrix({{1.0, 0.0}, {0.8, 0.6}, {0.0, 1.0}})},
            {"p", matrix({{0.8, 0.6}, {0.6, 0.8}, {0.0, 1.0}})},
            {"qid", Tensor::from_indices({0, 0, 1}, {3})},
            {"log_tau", Tensor::scalar(std::log(0.5), Dtype::Float64)}};
}

Tensor same_query_mask(const Tensor& qid) {
    Tensor ids = qid.to(Dtype::Float64);  // [N]
    int64_t N = ids.size(0);
    return 1.0 - step(abs(ids.reshape({N, 1}) - ids.reshape({1, N})));  // [N, N]
}

void append_logit_gradient_steps(std::vector<DerivationStep>& steps, const Tensor& q, const Tensor& p,
                                 const Tensor& G, const Tensor& l, double tau) {
    Tensor dq = matmul(G, p) / tau;  // [N, d]
    steps.push_back({"dq", "G p / tau", dq});
    steps.push_back({"dp", "G^T q / tau", matmul(G, q, Transpose::First) / tau});
    steps.push_back({"dlog_tau", "tau dL/dtau = -sum_ij G_ij l_ij", -sum(G * l)});
    steps.push_back({"-sum_i q_i.dq_i", "the same number, as the backward forms it", -sum(q * dq)});
}

WorkedExampleRun run_worked_example(const LossDefinition& loss) {
    NCE_CHECK(loss.worked_example != nullptr, "{}: no worked example is registered for this loss", loss.name);
    WorkedExample example = loss.worked_example();
    WorkedExampleRun run;
    run.arguments = make_arguments(loss, example.inputs, example.params);

    {
        NoGradGuard no_grad;  // the steps are plain math: nothing to record
        run.steps = example.steps(run.arguments);
    }
    Var value = loss.compute(run.arguments);
    run.loss = value.value().item();
    if (value.requires_grad()) value.backward();

    for (const InputSpec& spec : loss.inputs) {
        if (spec.kind == InputKind::Data || !run.arguments.has(spec.name)) continue;
        const Var& input = run.arguments.input(spec.name);
        Tensor gradient = input.grad();
        if (!gradient.defined()) gradient = zeros_like(input.value());  // a guide: gradient zero
        run.gradients.emplace_back(spec.name, gradient);
    }
    for (const DerivationStep& step : run.steps) {
        for (const auto& [name, gradient] : run.gradients) {
            if (step.name != "d" + name) continue;
            NCE_CHECK(step.value.shape() == gradient.shape(), "{}: worked-example step {} has shape {}, the gradient {}",
                      loss.name, step.name, shape_string(step.value.shape()), shape_string(gradient.shape()));
            run.checks.push_back({name, max_abs_difference(step.value, gradient)});
        }
    }
    return run;
}

}  // namespace nce::losses
