// nce explain NAME
//
// Prints a loss's worked example (losses/worked_example.h) or an engine op's
// (engine/worked_examples/op_worked_example.h): its small inputs, the steps of its derivation
// page computed from them, the loss (for an op with a non-scalar output, L = sum(W ⊙ Y) with
// the printed W), the gradients its backward returns, and whether each closed-form gradient
// among the steps equals the backward's. Every page in docs/derivations/ (the losses) and
// docs/derivations/ops/ (the ops) shows this print verbatim; tests/explain_pages_test.sh holds
// them to it. Exits 1 when a closed form disagrees with the backward.
// `nce explain --list` prints every name, one a line: NAME, loss or op, and its page.
#include <fmt/core.h>
#include <fmt/ranges.h>

#include <cmath>
#include <string>
#include <vector>

#include "apps/commands.h"
#include "engine/nce.h"
#include "engine/worked_examples/op_worked_example.h"
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
        for (int64_t k = 0; k < columns; ++k) row += fmt::format(" {:>10}", entry(values[start + k]));  // a space even past 10 characters
        fmt::print("{}\n", row);
    }
}

// The closing line both kinds print: which closed forms agree with the backward, which not.
// Returns the exit code: 1 when one disagrees.
int print_agreement(const std::vector<std::pair<std::string, double>>& checks, double tolerance) {
    std::vector<std::string> agree, disagree;
    for (const auto& [input, difference] : checks) {
        if (difference <= tolerance)
            agree.push_back("d" + input);
        else
            disagree.push_back(fmt::format("d{} (off by {:.3g})", input, difference));
    }
    if (!agree.empty()) fmt::print("\nclosed form = backward, to {:g}: {}\n", tolerance, fmt::join(agree, ", "));
    if (!disagree.empty()) {
        fmt::print("closed form != backward: {}\n", fmt::join(disagree, ", "));
        return 1;
    }
    return 0;
}

int run_op(const worked_examples::OpWorkedExample& example) {
    worked_examples::OpWorkedExampleRun run = worked_examples::run_op_worked_example(example);

    fmt::print("{}: worked example, float64 ({})\n\n", example.name, worked_examples::op_example_page(example));
    std::vector<std::string> params;
    for (const auto& [name, value] : example.parameters) params.push_back(fmt::format("{} = {}", name, value));
    fmt::print("parameters: {}\n\n", params.empty() ? "none" : fmt::format("{}", fmt::join(params, ", ")));

    fmt::print("inputs\n");
    for (const worked_examples::ExampleInput& input : example.inputs) print_tensor(input.name, input.value);
    if (example.upstream.defined()) {
        fmt::print("\nupstream: L = sum(W ⊙ Y), so dL/dY = W\n");
        print_tensor("W", example.upstream);
    }
    fmt::print("\nsteps\n");
    for (const worked_examples::ExampleStep& step : run.steps)
        print_tensor(fmt::format("{} = {}", step.name, step.formula), step.value);
    fmt::print("\noutput\n");
    if (example.upstream.defined()) {
        print_tensor("Y", run.output);
        fmt::print("  L = sum(W ⊙ Y) = {}\n", number(run.loss));
    } else {
        print_tensor("L", run.output);  // a scalar output is the L the example differentiates
    }
    fmt::print("\ngradients from the backward\n");
    for (const auto& [input, gradient] : run.gradients) print_tensor("dL/d" + input, gradient);

    std::vector<std::pair<std::string, double>> checks;
    for (const worked_examples::OpClosedFormCheck& check : run.checks)
        checks.emplace_back(check.input, check.max_difference);
    return print_agreement(checks, worked_examples::kOpClosedFormTolerance);
}

// Every name `nce explain` takes, one a line: NAME, kind, page.
void print_list() {
    for (const losses::LossDefinition& loss : losses::all_losses())
        fmt::print("{:<28} loss  docs/derivations/{}.md\n", loss.name, loss.name);
    for (const worked_examples::OpWorkedExample& example : worked_examples::op_worked_examples())
        fmt::print("{:<28} op    {}\n", example.name, worked_examples::op_example_page(example));
}

int run(const std::string& name) {
    if (const worked_examples::OpWorkedExample* example = worked_examples::find_op_worked_example(name))
        return run_op(*example);
    bool is_loss = false;
    std::vector<std::string> loss_names, op_names;
    for (const losses::LossDefinition& loss : losses::all_losses()) {
        is_loss = is_loss || loss.name == name;
        loss_names.push_back(loss.name);
    }
    for (const worked_examples::OpWorkedExample& example : worked_examples::op_worked_examples())
        op_names.push_back(example.name);
    NCE_CHECK(is_loss, "explain: unknown name '{}'; losses: {}; ops: {} (nce explain --list)", name,
              fmt::join(loss_names, ", "), fmt::join(op_names, ", "));
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

    std::vector<std::pair<std::string, double>> checks;
    for (const losses::ClosedFormCheck& check : run.checks) checks.emplace_back(check.input, check.max_difference);
    return print_agreement(checks, losses::kClosedFormTolerance);
}

}  // namespace

void add_explain_command(CLI::App& app, int& exit_code) {
    auto name = std::make_shared<std::string>();
    auto list = std::make_shared<bool>(false);
    CLI::App* command = app.add_subcommand(
        "explain", "Print a loss's or an engine op's worked example: inputs, each step of its derivation, the "
                   "output or loss, and its gradients");
    command->add_option("name", *name, "The loss or op (nce explain --list shows every name)");
    command->add_flag("--list", *list, "List every loss and op that has a worked example, and its page");
    command->callback([name, list, &exit_code] {
        if (*list) {
            print_list();
            exit_code = 0;
            return;
        }
        NCE_CHECK(!name->empty(), "explain: name a loss or an op (nce explain --list shows every name)");
        exit_code = run(*name);
    });
}

}  // namespace nce::apps
