// nce explain NAME
//
// Prints a loss's worked example (losses/worked_example.h): its small inputs, the steps of
// its derivation page computed from them, the loss, the gradients its backward returns, and
// whether each closed-form gradient among the steps equals the backward's. Every page in
// docs/derivations/ shows this print verbatim; tests/explain_pages_test.sh holds them to it.
// Exits 1 when a closed form disagrees with the backward.
#include <fmt/core.h>
#include <fmt/ranges.h>

#include <cmath>
#include <string>
#include <vector>

#include "apps/commands.h"
#include "engine/nce.h"
#include "losses/losses.h"
#include "losses/worked_example.h"

namespace nce::apps {
namespace {

// Six decimals, and no "-0.000000" for a tiny negative.
std::string number(double value) {
    std::string text = fmt::format("{:.6f}", value);
    if (text.find_first_not_of("-0.") == std::string::npos) text = "0.000000";
    return text;
}

// A tensor as rows of its last axis, each row indented; a scalar on the header line.
void print_tensor(const std::string& header, const Tensor& tensor) {
    std::vector<double> values = tensor.to_vector();
    bool integers = tensor.dtype() == Dtype::Int64;
    auto entry = [&](double value) { return integers ? fmt::format("{}", static_cast<int64_t>(value)) : number(value); };
    if (tensor.numel() == 1) {
        fmt::print("  {} = {}\n", header, entry(values[0]));
        return;
    }
    fmt::print("  {}   {}\n", header, shape_string(tensor.shape()));
    int64_t columns = tensor.rank() == 0 ? 1 : tensor.size(-1);
    for (size_t start = 0; start < values.size(); start += static_cast<size_t>(columns)) {
        std::string row = "    ";
        for (int64_t k = 0; k < columns; ++k) row += fmt::format("{:>11}", entry(values[start + k]));
        fmt::print("{}\n", row);
    }
}

int run(const std::string& name) {
    const losses::LossDefinition& loss = losses::find_loss(name);
    losses::WorkedExampleRun run = losses::run_worked_example(loss);

    fmt::print("{}: worked example, float64 (docs/derivations/{}.md)\n\n", loss.name, loss.name);
    std::vector<std::string> params;
    for (const losses::ParamSpec& param : loss.params) {
        bool overridden = param.name == "tau" && run.arguments.has("log_tau");
        params.push_back(fmt::format("{} = {}{}", param.name, run.arguments.text(param.name),
                                     overridden ? " (unused: log_tau sets tau)" : ""));
    }
    fmt::print("parameters: {}\n\n", params.empty() ? "none" : fmt::format("{}", fmt::join(params, ", ")));

    fmt::print("inputs\n");
    for (const losses::InputSpec& spec : loss.inputs)
        if (run.arguments.has(spec.name)) print_tensor(spec.name, run.arguments.input(spec.name).value());
    fmt::print("\nsteps\n");
    for (const losses::DerivationStep& step : run.steps)
        print_tensor(fmt::format("{} = {}", step.name, step.formula), step.value);
    fmt::print("\nloss\n  L = {}\n", number(run.loss));
    fmt::print("\ngradients from the backward\n");
    for (const auto& [input, gradient] : run.gradients) print_tensor("dL/d" + input, gradient);

    std::vector<std::string> agree, disagree;
    for (const losses::ClosedFormCheck& check : run.checks) {
        if (check.max_difference <= losses::kClosedFormTolerance)
            agree.push_back("d" + check.input);
        else
            disagree.push_back(fmt::format("d{} (off by {:.3g})", check.input, check.max_difference));
    }
    if (!agree.empty())
        fmt::print("\nclosed form = backward, to {:g}: {}\n", losses::kClosedFormTolerance, fmt::join(agree, ", "));
    if (!disagree.empty()) {
        fmt::print("closed form != backward: {}\n", fmt::join(disagree, ", "));
        return 1;
    }
    return 0;
}

}  // namespace

void add_explain_command(CLI::App& app, int& exit_code) {
    auto name = std::make_shared<std::string>();
    CLI::App* command = app.add_subcommand(
        "explain", "Print a loss's worked example: inputs, each step of its derivation, the loss and its gradients");
    command->add_option("name", *name, "The loss (nce loss --list shows every loss)")->required();
    command->callback([name, &exit_code] { exit_code = run(*name); });
}

}  // namespace nce::apps
