// An engine op's worked example, run: the small float64 inputs of its page in
// docs/derivations/ops/<page>.md, the forward and the closed-form gradient as named steps
// computed in plain tensor math, the op's output, the gradients its own backward returns,
// and the check that every closed-form gradient among the steps equals the backward's.
// `nce explain NAME` prints it as it prints a loss's (apps/explain_command.cpp); every op
// page shows that print verbatim, and tests/explain_pages_test.sh holds the pages to it.
//
// Adding an op example (one file per example, nothing of anyone else's to touch but a line
// in two lists):
//   1. engine/worked_examples/<name>_example.cpp defines `OpWorkedExample <name>_worked_example()`
//      in namespace nce::worked_examples (see matmul_example.cpp for the pattern).
//   2. Declare it and add it to the list in engine/worked_examples/op_worked_examples.cpp.
//   3. Add the file to engine/meson.build, build, and run `nce explain <name>`.
//   4. Write docs/derivations/ops/<page>.md with a ```text block opened by the line
//      `$ nce explain <name>`, then `bash scripts/explain_pages.sh <name>` pastes the print in.
//   Names are unique across op examples and losses (`nce explain --list` shows both).
//   A page may hold several examples (gelu and gelu_tanh share gelu.md): set `page`.
#pragma once
#include <functional>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "engine/autograd.h"
#include "engine/tensor.h"

namespace nce::worked_examples {

struct ExampleInput {
    std::string name;          // as the page writes it: "A", "x", "targets"
    Tensor value;              // float64 (or int64 for indices)
    bool differentiable = true;  // false: data the op reads but gets no gradient (targets, masks)
};

struct ExampleStep {
    std::string name;     // as the page writes it: "mean", "rstd", "dx"; "d<input>" is checked
    std::string formula;  // how it is formed: "rstd (g - mean(g) - xhat mean(g xhat))"
    Tensor value;
};

struct OpWorkedExample {
    std::string name;   // what `nce explain NAME` takes; unique among op examples and losses
    std::string page;   // docs/derivations/ops/<page>.md; empty: the same as name
    std::vector<std::pair<std::string, std::string>> parameters;  // printed "name = value", in order
    std::vector<ExampleInput> inputs;
    // The weight W of the scalar the example differentiates when the output Y is not a
    // scalar: L = sum(W ⊙ Y), so dL/dY = W. Same shape as Y. Undefined for a scalar output
    // (then L = Y).
    Tensor upstream;
    // The op itself on the inputs as Vars (in the order of `inputs`).
    std::function<Var(const std::vector<Var>&)> forward;
    // The page's steps from the input values (and W, undefined for a scalar output), in
    // plain tensor math: the forward's intermediates, then the closed-form gradients, each
    // gradient of an input named "d<input>" so it is checked against the backward.
    std::function<std::vector<ExampleStep>(const std::vector<Tensor>& inputs, const Tensor& upstream)> steps;
};

struct OpClosedFormCheck {
    std::string input;      // "A"
    double max_difference;  // max |closed form - backward| over the entries
};

struct OpWorkedExampleRun {
    std::vector<ExampleStep> steps;
    Tensor output;  // Y
    double loss = 0;  // L = sum(W ⊙ Y), or Y for a scalar output
    std::vector<std::pair<std::string, Tensor>> gradients;  // dL/d<input> from the backward, in input order
    std::vector<OpClosedFormCheck> checks;                  // one per step named d<input>
};

// Every op example, in registration order (op_worked_examples.cpp).
const std::vector<OpWorkedExample>& op_worked_examples();
// The example named `name`, or nullptr.
const OpWorkedExample* find_op_worked_example(const std::string& name);
// The page an example is printed on: "docs/derivations/ops/<page>.md".
std::string op_example_page(const OpWorkedExample& example);

// Runs the example in float64: steps with no graph, then the op and its backward.
OpWorkedExampleRun run_op_worked_example(const OpWorkedExample& example);

// For writing examples: a float64 matrix from its rows, {{1.0, -2.0, 0.5}, {...}}, and a
// float64 vector.
Tensor float64_matrix(std::initializer_list<std::initializer_list<double>> rows);
Tensor float64_vector(std::initializer_list<double> values);

// Agreement a closed form must reach with the backward (float64), as the losses'.
constexpr double kOpClosedFormTolerance = 1e-12;

}  // namespace nce::worked_examples
