// nce graph LOSS [--inputs DIR | --rows N] [--values] [--expanded] [--set key=value]...
//                [--dtype float64|float32] [--output FILE.dot]
//
// Runs one loss of the catalogue forward and writes its autograd graph as Graphviz DOT
// (engine/graph_dot.h) to stdout or, atomically, to FILE; `dot -Tsvg` draws it. The inputs:
// DIR/<input>.npy as `nce loss` reads them; or an N-row example (--rows N): the loss's worked
// example when it has N rows, else a random problem as `nce gradcheck` draws it (the loss's
// `example` at N rows, dimension 4, seed 1); or, by default, the worked example of the
// loss's page. --values also runs the
// backward and shows each tensor's norm and the norm of its gradient. --expanded draws the
// op-by-op form (losses/infonce_expanded.h) instead of the one fused node. Errors are one line.
#include <fmt/core.h>
#include <fmt/ranges.h>

#include <map>
#include <string>
#include <vector>

#include "apps/commands.h"
#include "apps/loss_inputs.h"
#include "retrieval/settings/run_config.h"
#include "engine/nce.h"
#include "losses/infonce_expanded.h"
#include "losses/losses.h"

namespace nce::apps {
namespace {

struct GraphOptions {
    std::string name;
    std::string inputs_dir;
    int64_t rows = 0;  // 0: the worked example
    bool values = false;
    bool expanded = false;
    std::vector<std::string> settings;
    std::string dtype = "float64";
    std::string output;
};

// The example's rows: those of its first input in the loss's order.
int64_t example_rows(const losses::LossDefinition& loss, const std::map<std::string, Tensor>& inputs) {
    for (const losses::InputSpec& spec : loss.inputs)
        if (auto it = inputs.find(spec.name); it != inputs.end() && it->second.rank() > 0) return it->second.size(0);
    return 0;
}

// The inputs to draw, the parameters they come with, and a caption saying where they came from.
struct GraphProblem {
    std::map<std::string, Tensor> inputs;
    std::map<std::string, std::string> params;
    std::string source;
};

GraphProblem choose_problem(const losses::LossDefinition& loss, const GraphOptions& options, Dtype dtype) {
    GraphProblem problem;
    if (!options.inputs_dir.empty()) {
        problem.inputs = read_loss_inputs(loss, options.inputs_dir, dtype);
        problem.source = "inputs from " + options.inputs_dir;
        return problem;
    }
    NCE_CHECK(loss.worked_example, "graph: {} has no worked example; give --inputs DIR or --rows N", loss.name);
    losses::WorkedExample worked = loss.worked_example();
    int64_t worked_rows = example_rows(loss, worked.inputs);
    if (options.rows == 0 || options.rows == worked_rows) {
        problem.inputs = worked.inputs;
        problem.params = worked.params;
        problem.source = fmt::format("the worked example of docs/derivations/{}.md, {} rows", loss.name, worked_rows);
    } else {
        NCE_CHECK(loss.example, "graph: {} has no random example; give --inputs DIR", loss.name);
        Generator generator(1);
        problem.inputs = loss.example(generator, options.rows, 4);
        problem.source = fmt::format("a random example as nce gradcheck draws it, rows {}, dimension 4, seed 1",
                                     options.rows);
    }
    for (auto& [name, value] : problem.inputs)
        if (is_floating(value.dtype()) && name != "qid") value = value.to(dtype);
    return problem;
}

int run(const GraphOptions& options) {
    NCE_CHECK(!options.name.empty(), "graph: name a loss (nce loss --list shows them)");
    const losses::LossDefinition& loss = losses::find_loss(options.name);
    NCE_CHECK(options.inputs_dir.empty() || options.rows == 0,
              "{}: give --inputs DIR or --rows N, not both (--rows picks an example, --inputs reads yours)", loss.name);
    NCE_CHECK(options.rows == 0 || options.rows >= 2, "{}: --rows {} is too small; give at least 2", loss.name,
              options.rows);
    const losses::ExpandedLoss* expanded = nullptr;
    if (options.expanded) {
        expanded = losses::find_expanded_loss(loss.name);
        NCE_CHECK(expanded != nullptr, "{}: no expanded form (it is one fused node); losses with one: {}", loss.name,
                  fmt::join(losses::expanded_loss_names(), ", "));
    }
    Dtype dtype = parse_dtype(options.dtype);
    std::map<std::string, std::string> settings = parse_settings(options.settings, loss.name);

    GraphProblem problem = choose_problem(loss, options, dtype);
    for (const auto& [key, value] : settings) problem.params[key] = value;  // --set wins over the example's

    // Every node keeps its value, its constant inputs (so they can be named) and, with
    // --values, the gradient that reaches it: a small example's graph, drawn once.
    KeepValuesGuard keep_values;
    losses::LossArguments arguments = losses::make_arguments(loss, problem.inputs, problem.params);
    Var value = expanded ? (*expanded)(arguments) : loss.compute(arguments);
    if (options.values && value.requires_grad() && value.value().numel() == 1) value.backward();

    DotOptions dot;
    dot.with_values = options.values;
    for (const losses::InputSpec& spec : loss.inputs)
        if (arguments.has(spec.name)) dot.names.emplace_back(spec.name, arguments.input(spec.name));
    dot.names.emplace_back("L", value);
    dot.title = fmt::format("nce graph {}{}: {}, {}", loss.name, options.expanded ? " --expanded" : "", problem.source,
                            dtype_name(dtype));
    std::string text = to_dot(value, dot);

    if (options.output.empty()) {
        fmt::print("{}", text);
    } else {
        retrieval::write_text_file_atomically(options.output, text);
        fmt::print("{}: wrote the graph to {} (render it: dot -Tsvg {} -o graph.svg)\n", loss.name, options.output,
                   options.output);
    }
    return 0;
}

}  // namespace

void add_graph_command(CLI::App& app, int& exit_code) {
    auto options = std::make_shared<GraphOptions>();
    CLI::App* command = app.add_subcommand(
        "graph", "Write a loss's autograd graph as Graphviz DOT (dot -Tsvg draws it): each op, shape and dtype");
    command->add_option("name", options->name, "The loss (nce loss --list shows them)");
    command->add_option("--inputs", options->inputs_dir,
                        "Folder holding <input>.npy for each input, as nce loss reads it (default: the loss's worked "
                        "example)");
    command->add_option("--rows", options->rows,
                        "Draw an N-row example: the worked example if it has N rows, else a random one (as nce gradcheck)");
    command->add_flag("--values", options->values,
                      "Run the backward too and show each tensor's norm (entries when at most 4) and its gradient's");
    command->add_flag("--expanded", options->expanded,
                      "Draw the loss op by op (matmul, temperature, log_softmax, ...) where it has such a form");
    command->add_option("--set", options->settings, "Override a parameter, key=value (repeatable): --set tau=0.07")
        ->allow_extra_args(false);
    command->add_option("--dtype", options->dtype, "Compute in float64 (default) or float32");
    command->add_option("--output", options->output, "Write the DOT to this file (atomically) instead of stdout");
    command->callback([options, &exit_code] { exit_code = run(*options); });
}

}  // namespace nce::apps
